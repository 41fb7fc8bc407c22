"""The core: exit codes, the Verdict, the error family, the option grammar and its groups (layouts,
tolerances), the one CRC32, the two halves of a job on two cores. Imports no other forensics package."""
