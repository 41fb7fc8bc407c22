"""The greedy re-synchronising walk as first written (one agrees() call per candidate), kept as the
oracle for forensics.csr.compare._greedy, which short-cuts the same checks."""

from bisect import bisect_left

GREEDY_WINDOW, GREEDY_CONFIRM = 16, 4


def greedy(a, alo, ahi, b, blo, bhi, out):
    """Fallback for wildly different regions: walk both; at a difference take the smallest substitution,
    deletion or insertion after which GREEDY_CONFIRM accesses agree, else skip to the nearer next occurrence.
    O((N+M)·GREEDY_WINDOW·GREEDY_CONFIRM); not minimal, but it re-synchronises after local damage."""
    pos_a, pos_b = {}, {}
    for i in range(alo, ahi):
        pos_a.setdefault(a[i], []).append(i)
    for j in range(blo, bhi):
        pos_b.setdefault(b[j], []).append(j)

    def next_at(positions, key, start):
        lst = positions.get(key)
        if not lst:
            return None
        k = bisect_left(lst, start)
        return lst[k] if k < len(lst) else None

    def agrees(i, j, n=GREEDY_CONFIRM):
        """a and b agree for n elements from (i, j) (or to the end of either)."""
        for k in range(n):
            if i + k >= ahi or j + k >= bhi:
                return True
            if a[i + k] != b[j + k]:
                return False
        return True

    i, j = alo, blo
    while i < ahi and j < bhi:
        if a[i] == b[j]:
            out.append((i, j))
            i += 1
            j += 1
            continue
        # The cheapest local repair that the following accesses confirm: s substituted, deleted or
        # inserted accesses, s = 1, 2, ... GREEDY_WINDOW.
        for s in range(1, GREEDY_WINDOW + 1):
            if i + s <= ahi and j + s <= bhi and agrees(i + s, j + s):
                out.extend((ii, None) for ii in range(i, i + s))
                out.extend((None, jj) for jj in range(j, j + s))
                i += s
                j += s
                break
            if i + s <= ahi and agrees(i + s, j):
                out.extend((ii, None) for ii in range(i, i + s))
                i += s
                break
            if j + s <= bhi and agrees(i, j + s):
                out.extend((None, jj) for jj in range(j, j + s))
                j += s
                break
        else:
            jb = next_at(pos_b, a[i], j)   # where a[i] shows up again in b
            ia = next_at(pos_a, b[j], i)   # where b[j] shows up again in a
            if jb is not None and (ia is None or jb - j <= ia - i):
                out.extend((None, jj) for jj in range(j, jb))
                j = jb
            elif ia is not None:
                out.extend((ii, None) for ii in range(i, ia))
                i = ia
            else:
                out.append((i, None))
                out.append((None, j))
                i += 1
                j += 1
    out.extend((ii, None) for ii in range(i, ahi))
    out.extend((None, jj) for jj in range(j, bhi))


