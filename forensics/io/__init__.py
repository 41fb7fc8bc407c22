"""Bytes in and out: dumps read-only (binary, .npy, .npz, text hex dumps), JSON of user files read safely,
class-name files, atomic and guarded outputs."""
