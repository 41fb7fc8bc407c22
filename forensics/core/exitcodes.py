"""The exit codes of every command, defined once (cmp/diff's convention), for the CLI and forensics.reports."""

SAME = 0        # same / ok
DIFFERENT = 1   # differences found (or, for diagnose, findings; for csr --name, nothing found)
ERROR = 2       # usage or input error (every ForensicsError)
BUG = 3         # an internal error: not a ForensicsError
INTERRUPTED = 130  # Ctrl-C, as a shell reports SIGINT
BROKEN_PIPE = 141  # stdout's reader left (`forensics crc a b | head -1`): as a shell reports cat ended by SIGPIPE
