/* ntddk.h stand-in: the few WDK names docs/kernel.md's C blocks use, so tests/c/test_c_docs.py can compile
   them with the host compiler where mingw-w64's ddk headers are absent (with them, the real header is used).
   Defining _NTDDK_ is what the real header does, so forensics_run.h takes its Windows-kernel branch. */
#ifndef _NTDDK_
#define _NTDDK_
typedef unsigned char UCHAR;
typedef unsigned char BOOLEAN;
typedef unsigned int ULONG;
typedef unsigned long long ULONG64;
typedef long NTSTATUS;
#if defined(_WIN64) || defined(__x86_64__) || defined(__aarch64__)
typedef unsigned long long SIZE_T;
#else
typedef unsigned long SIZE_T;
#endif
#define TRUE 1
#define FALSE 0
#define STATUS_SUCCESS ((NTSTATUS)0x00000000L)
#define STATUS_INVALID_PARAMETER ((NTSTATUS)0xC000000DL)
ULONG DbgPrint(const char *format, ...);
#endif
