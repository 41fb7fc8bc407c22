/* SPDX-License-Identifier: Apache-2.0 */
/* forensics_run.h - write forensics runs (run format version 1) and fingerprint lines from C and C++.

   A single header. In exactly one C or C++ file of your program:

       #define FORENSICS_RUN_IMPLEMENTATION
       #include "forensics_run.h"

   Everywhere else include it without the define.

   Kernel part. A driver gets only the part that allocates nothing, does no I/O and calls nothing (no C
   runtime, no compiler helper such as __udivdi3 or memset, at any optimisation level, 32 or 64 bits):
   fr_crc32, fr_xorfold64, the streaming fingerprint fr_fp_*, fr_fingerprint_line, fr_link_u32 and the
   error codes. It is selected by the platform:
     - Linux kernel module (kbuild defines __KERNEL__): <linux/types.h>, no libc header;
     - Windows kernel (_KERNEL_MODE, which the WDK's /kernel sets, or <wdm.h> / <ntddk.h> / <ntifs.h>
       included first): no C runtime header at all, the Windows ABI's own widths;
     - anywhere else, define FORENSICS_RUN_KERNEL_ONLY for the same part on <stddef.h> and <stdint.h>.
   The kernel part runs at any IRQL <= DISPATCH_LEVEL on nonpaged memory (see docs/kernel.md).
   fr_u8, fr_u32, fr_u64, fr_i64 and fr_size are uint8_t, uint32_t, uint64_t, int64_t and size_t (the same
   types, so a driver passes its own values unchanged).

   The run format is documented in the forensics docs ("The run format (version 1)"): a directory with
   one file per buffer and manifest.json. fr_run_begin creates a hidden temporary directory beside the
   target, fr_run_add writes <stage>/<name>.bin there, fr_run_commit writes manifest.json last and renames
   the directory into place in one step, so a crash never leaves a directory that looks like a complete run.

   Every function returns 0 (FR_OK) on success or a negative FR_E_... code. Not thread-safe per run: one
   fr_run is used by one thread at a time (different runs from different threads are fine).
   Dependencies: the C standard library and the OS (POSIX, or Win32 with UTF-8 paths converted to UTF-16).
   Each file is flushed to the disk before the manifest is written (fsync / FlushFileBuffers); define
   FORENSICS_RUN_NO_FSYNC to skip that where durability does not matter (tests, RAM disks).
*/
#ifndef FORENSICS_RUN_H
#define FORENSICS_RUN_H

#if defined(__linux__) && defined(__KERNEL__)
#define FR__KERNEL_LINUX 1
#include <linux/types.h>  /* kbuild provides no <stddef.h> / <stdint.h>; this has size_t and uint32_t */
typedef uint8_t fr_u8;
typedef uint32_t fr_u32;
typedef uint64_t fr_u64;
typedef int64_t fr_i64;
typedef size_t fr_size;
#elif defined(_KERNEL_MODE) || defined(_WDMDDK_) || defined(_NTDDK_) || defined(_NTIFS_)
#define FR__KERNEL_WDK 1
/* Windows is LLP64 on every architecture: int is 32 bits, long long 64, size_t as wide as a pointer.
   These are the types of UINT8, UINT32, UINT64 and size_t, so they agree with any header included later. */
typedef unsigned char fr_u8;
typedef unsigned int fr_u32;
typedef unsigned long long fr_u64;
typedef long long fr_i64;
#if defined(__SIZE_TYPE__)
typedef __SIZE_TYPE__ fr_size;  /* gcc and clang (mingw-w64) name size_t's type */
#elif defined(_WIN64)
typedef unsigned long long fr_size;
#else
typedef unsigned int fr_size;
#endif
#else
#include <stddef.h>
#include <stdint.h>
typedef uint8_t fr_u8;
typedef uint32_t fr_u32;
typedef uint64_t fr_u64;
typedef int64_t fr_i64;
typedef size_t fr_size;
#endif

#if (defined(FR__KERNEL_LINUX) || defined(FR__KERNEL_WDK)) && !defined(FORENSICS_RUN_KERNEL_ONLY)
#define FORENSICS_RUN_KERNEL_ONLY  /* a kernel has no files to write runs to */
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes: 0 is success, every failure is one of these (all negative, all distinct). */
#define FR_OK            0
#define FR_E_NULL       -1  /* a required pointer argument is NULL (or data is NULL with size > 0) */
#define FR_E_ARG        -2  /* dir empty, source blank, or a string that is not valid UTF-8 */
#define FR_E_STAGE      -3  /* stage is not params, instructions, image, input, raw, relayouted, tensor, dequantized
                               or detections */
#define FR_E_TENSOR     -4  /* tensor empty, not UTF-8, or holding '/', '\\', "..", or control characters */
#define FR_E_DUPLICATE  -5  /* this (stage, tensor) was already added to the run */
#define FR_E_EXISTS     -6  /* the target directory (or a file of that name) already exists */
#define FR_E_META       -7  /* meta: scale not positive and finite, bad shape/rank, record_size < 0, bad role */
#define FR_E_NOMEM      -8  /* out of memory */
#define FR_E_IO         -9  /* the file system refused (mkdir, write, rename): errno / GetLastError says why */
#define FR_E_FAILED    -10  /* an earlier fr_run_add failed writing; the run cannot be committed */
#define FR_E_BUFFER    -11  /* fingerprint: the output buffer is too small */
#define FR_E_TAG       -12  /* fingerprint: tag empty, longer than FR_TAG_MAX, or not [A-Za-z0-9_.:-] */
#define FR_E_DTYPE     -13  /* meta: dtype is not one of the run reader's names (uint8, float32, ...) */
#define FR_E_SIZE      -14  /* fr_fp: more bytes than total_size fed, or fewer when the line is asked for */
#define FR_E_RANGE     -15  /* fr_link_u32: offset_bit + 32 is past the end of the bitstream */

/* The longest fingerprint line, NUL excluded: with the "\n" a driver adds it is 512 bytes, what one
   DbgPrint call transmits. Tags are at most FR_TAG_MAX characters, so every line fits. */
#define FR_FP_LINE_MAX  511
#define FR_TAG_MAX      238
/* Bytes a fingerprint line needs at most for a tag of tag_len characters, terminating NUL included. */
#define FR_FINGERPRINT_SIZE(tag_len) ((fr_size)(tag_len) + 274u)

/* zlib's CRC32 (IEEE 802.3, reflected 0xEDB88320): crc = 0 to start, feed the previous value to continue. */
fr_u32 fr_crc32(fr_u32 crc, const void *data, fr_size size);
/* XOR of the buffer's little-endian 64-bit words, the trailing partial word zero-extended (any host order). */
fr_u64 fr_xorfold64(const void *data, fr_size size);

/* Streaming fingerprint: the same line as fr_fingerprint_line, fed in chunks (any sizes, in order: a page
   range at a time), one pass over the data, no allocation. The struct is complete so it can live on a
   driver's stack (about 100 bytes); its fields are private. */
typedef struct fr_fp {
    fr_u64 total, seen;     /* the size announced to fr_fp_begin, the bytes fed so far */
    fr_u64 at[3];           /* where HEAD, MID and TAIL start */
    fr_u32 crc;             /* the CRC register (inverted, as the table loop keeps it) */
    fr_u32 fold[2];         /* XOR of bytes 0-3 and of bytes 4-7 of every 8-byte word */
    fr_u32 peek[3][4];      /* the 16 bytes at each of HEAD, MID, TAIL, little-endian words */
    fr_u32 magic;           /* set by fr_fp_begin: updates on an unbegun fr_fp are refused */
} fr_fp;
void fr_fp_begin(fr_fp *fp, fr_u64 total_size);
/* FR_OK; FR_E_NULL; FR_E_SIZE when the chunk would pass total_size (nothing of it is taken). */
int  fr_fp_update(fr_fp *fp, const void *data, fr_size size);
/* The line into buf as fr_fingerprint_line writes it; its length, or FR_E_NULL, FR_E_TAG, FR_E_BUFFER,
   FR_E_SIZE (not all total_size bytes fed). fp may be finalised again (another tag, another buffer). */
int  fr_fp_final(const fr_fp *fp, char *buf, fr_size bufsize, const char *tag);

/* One line, NUL-terminated, no newline, at most FR_FP_LINE_MAX characters:
     [FP] <tag> size=<n> crc32=0x<8 hex> xor64=0x<16 hex> head@0x0=<bytes> mid@0x<off>=<bytes> tail@0x<off>=<bytes>
   <bytes>: up to 16 bytes as lowercase hex pairs separated by one space; offsets as `forensics crc` picks
   them (mid at max(0, size/2 - 8), tail at max(0, size - 16)). Returns the length (without the NUL).
   One pass over data (fr_fp_begin, one fr_fp_update, fr_fp_final). */
int fr_fingerprint_line(char *buf, fr_size bufsize, const char *tag, const void *data, fr_size size);

/* Write the 32 bits of value into bitstream starting at bit offset_bit, least significant bit first: bit k
   of value goes to bit (offset_bit + k) % 8 of byte (offset_bit + k) / 8; every other bit is kept. This is
   how the Edge TPU's instruction bitstreams take a linked address (libedgetpu's CopyUint32, one call per
   32-bit half). FR_OK, FR_E_NULL (bitstream NULL), FR_E_RANGE (offset_bit + 32 > size * 8, nothing written). */
int fr_link_u32(fr_u8 *bitstream, fr_size size, fr_u64 offset_bit, fr_u32 value);

#ifndef FORENSICS_RUN_KERNEL_ONLY

typedef struct fr_run fr_run;

/* Per-buffer metadata for the manifest; pass NULL for none. Unused fields: NULL / 0. */
typedef struct {
    const char *dtype;      /* one of FR_DTYPES ("uint8", "float32", ...) or NULL */
    const int64_t *shape;   /* rank dimensions, or NULL for no shape (rank must then be 0) */
    int rank;
    int has_quant;          /* nonzero: write scale (positive, finite) and zero_point */
    double scale;
    int zero_point;
    int record_size;        /* bytes per record, 0 for none */
    const char *role;       /* "boxes", "scores", "classes", "num_detections" or NULL */
} fr_meta;

/* The dtypes fr_meta.dtype accepts, exactly the names the run reader accepts (numpy's canonical names;
   forensics/io/dump.py RUN_DTYPES, compared by tests/c). "uint8_t", "UINT8", "u8" (numpy's uint64!),
   "<f4", "bfloat16", "object" are refused with FR_E_DTYPE. */
#define FR_DTYPES "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", \
                  "float16", "float32", "float64"

/* Start a run that will appear at dir (which must not exist yet; its parent must). tool may be NULL.
   source must hold something other than whitespace (the reader strips Unicode whitespace, U+3000 too). */
int  fr_run_begin(fr_run **run, const char *dir, const char *source, const char *tool);
/* Write one buffer; stage is one of the nine stages (FR_E_STAGE lists them), tensor its name. Refused input writes nothing. */
int  fr_run_add(fr_run *run, const char *stage, const char *tensor, const void *data, size_t size,
                const fr_meta *meta);
/* Write manifest.json and rename the run into place. Frees run, whatever the result; on failure the
   temporary directory is removed, and errno / GetLastError() still say why the step failed. */
int  fr_run_commit(fr_run *run);
/* Give up: remove the temporary directory and free run (NULL is fine). */
void fr_run_abort(fr_run *run);
/* A short English description of an FR_... code, for messages. */
const char *fr_strerror(int code);

#endif /* FORENSICS_RUN_KERNEL_ONLY */

#ifdef __cplusplus
}
#endif
#endif /* FORENSICS_RUN_H */

/* ===================================================================================================== */
#if defined(FORENSICS_RUN_IMPLEMENTATION) && !defined(FORENSICS_RUN_IMPLEMENTED)
#define FORENSICS_RUN_IMPLEMENTED

#ifdef __cplusplus
extern "C" {
#endif

/* --- kernel part: no allocation, no I/O, no C runtime, no compiler helpers ---------------------------- */
/* No 64-bit division (i686 would call __udivdi3 / _aulldiv) and no loop a compiler may turn into memset or
   memcpy (byte copies go into words by shifts): tests/c checks `nm -u` at -O0, -Os, -O2, -O3, 32/64 bits. */

/* fr__crc_table[k][n]: the CRC register after byte n followed by k zero bytes (reflected polynomial
   0xEDB88320, the IEEE 802.3 / zlib CRC). Row 0 drives the byte-at-a-time loop; all eight rows let the
   main loop fold 8 bytes per step ("slicing-by-8"). Constant data: no initialisation race in a driver. */
static const fr_u32 fr__crc_table[8][256] = {
    {
        0x00000000u, 0x77073096u, 0xee0e612cu, 0x990951bau, 0x076dc419u, 0x706af48fu,
        0xe963a535u, 0x9e6495a3u, 0x0edb8832u, 0x79dcb8a4u, 0xe0d5e91eu, 0x97d2d988u,
        0x09b64c2bu, 0x7eb17cbdu, 0xe7b82d07u, 0x90bf1d91u, 0x1db71064u, 0x6ab020f2u,
        0xf3b97148u, 0x84be41deu, 0x1adad47du, 0x6ddde4ebu, 0xf4d4b551u, 0x83d385c7u,
        0x136c9856u, 0x646ba8c0u, 0xfd62f97au, 0x8a65c9ecu, 0x14015c4fu, 0x63066cd9u,
        0xfa0f3d63u, 0x8d080df5u, 0x3b6e20c8u, 0x4c69105eu, 0xd56041e4u, 0xa2677172u,
        0x3c03e4d1u, 0x4b04d447u, 0xd20d85fdu, 0xa50ab56bu, 0x35b5a8fau, 0x42b2986cu,
        0xdbbbc9d6u, 0xacbcf940u, 0x32d86ce3u, 0x45df5c75u, 0xdcd60dcfu, 0xabd13d59u,
        0x26d930acu, 0x51de003au, 0xc8d75180u, 0xbfd06116u, 0x21b4f4b5u, 0x56b3c423u,
        0xcfba9599u, 0xb8bda50fu, 0x2802b89eu, 0x5f058808u, 0xc60cd9b2u, 0xb10be924u,
        0x2f6f7c87u, 0x58684c11u, 0xc1611dabu, 0xb6662d3du, 0x76dc4190u, 0x01db7106u,
        0x98d220bcu, 0xefd5102au, 0x71b18589u, 0x06b6b51fu, 0x9fbfe4a5u, 0xe8b8d433u,
        0x7807c9a2u, 0x0f00f934u, 0x9609a88eu, 0xe10e9818u, 0x7f6a0dbbu, 0x086d3d2du,
        0x91646c97u, 0xe6635c01u, 0x6b6b51f4u, 0x1c6c6162u, 0x856530d8u, 0xf262004eu,
        0x6c0695edu, 0x1b01a57bu, 0x8208f4c1u, 0xf50fc457u, 0x65b0d9c6u, 0x12b7e950u,
        0x8bbeb8eau, 0xfcb9887cu, 0x62dd1ddfu, 0x15da2d49u, 0x8cd37cf3u, 0xfbd44c65u,
        0x4db26158u, 0x3ab551ceu, 0xa3bc0074u, 0xd4bb30e2u, 0x4adfa541u, 0x3dd895d7u,
        0xa4d1c46du, 0xd3d6f4fbu, 0x4369e96au, 0x346ed9fcu, 0xad678846u, 0xda60b8d0u,
        0x44042d73u, 0x33031de5u, 0xaa0a4c5fu, 0xdd0d7cc9u, 0x5005713cu, 0x270241aau,
        0xbe0b1010u, 0xc90c2086u, 0x5768b525u, 0x206f85b3u, 0xb966d409u, 0xce61e49fu,
        0x5edef90eu, 0x29d9c998u, 0xb0d09822u, 0xc7d7a8b4u, 0x59b33d17u, 0x2eb40d81u,
        0xb7bd5c3bu, 0xc0ba6cadu, 0xedb88320u, 0x9abfb3b6u, 0x03b6e20cu, 0x74b1d29au,
        0xead54739u, 0x9dd277afu, 0x04db2615u, 0x73dc1683u, 0xe3630b12u, 0x94643b84u,
        0x0d6d6a3eu, 0x7a6a5aa8u, 0xe40ecf0bu, 0x9309ff9du, 0x0a00ae27u, 0x7d079eb1u,
        0xf00f9344u, 0x8708a3d2u, 0x1e01f268u, 0x6906c2feu, 0xf762575du, 0x806567cbu,
        0x196c3671u, 0x6e6b06e7u, 0xfed41b76u, 0x89d32be0u, 0x10da7a5au, 0x67dd4accu,
        0xf9b9df6fu, 0x8ebeeff9u, 0x17b7be43u, 0x60b08ed5u, 0xd6d6a3e8u, 0xa1d1937eu,
        0x38d8c2c4u, 0x4fdff252u, 0xd1bb67f1u, 0xa6bc5767u, 0x3fb506ddu, 0x48b2364bu,
        0xd80d2bdau, 0xaf0a1b4cu, 0x36034af6u, 0x41047a60u, 0xdf60efc3u, 0xa867df55u,
        0x316e8eefu, 0x4669be79u, 0xcb61b38cu, 0xbc66831au, 0x256fd2a0u, 0x5268e236u,
        0xcc0c7795u, 0xbb0b4703u, 0x220216b9u, 0x5505262fu, 0xc5ba3bbeu, 0xb2bd0b28u,
        0x2bb45a92u, 0x5cb36a04u, 0xc2d7ffa7u, 0xb5d0cf31u, 0x2cd99e8bu, 0x5bdeae1du,
        0x9b64c2b0u, 0xec63f226u, 0x756aa39cu, 0x026d930au, 0x9c0906a9u, 0xeb0e363fu,
        0x72076785u, 0x05005713u, 0x95bf4a82u, 0xe2b87a14u, 0x7bb12baeu, 0x0cb61b38u,
        0x92d28e9bu, 0xe5d5be0du, 0x7cdcefb7u, 0x0bdbdf21u, 0x86d3d2d4u, 0xf1d4e242u,
        0x68ddb3f8u, 0x1fda836eu, 0x81be16cdu, 0xf6b9265bu, 0x6fb077e1u, 0x18b74777u,
        0x88085ae6u, 0xff0f6a70u, 0x66063bcau, 0x11010b5cu, 0x8f659effu, 0xf862ae69u,
        0x616bffd3u, 0x166ccf45u, 0xa00ae278u, 0xd70dd2eeu, 0x4e048354u, 0x3903b3c2u,
        0xa7672661u, 0xd06016f7u, 0x4969474du, 0x3e6e77dbu, 0xaed16a4au, 0xd9d65adcu,
        0x40df0b66u, 0x37d83bf0u, 0xa9bcae53u, 0xdebb9ec5u, 0x47b2cf7fu, 0x30b5ffe9u,
        0xbdbdf21cu, 0xcabac28au, 0x53b39330u, 0x24b4a3a6u, 0xbad03605u, 0xcdd70693u,
        0x54de5729u, 0x23d967bfu, 0xb3667a2eu, 0xc4614ab8u, 0x5d681b02u, 0x2a6f2b94u,
        0xb40bbe37u, 0xc30c8ea1u, 0x5a05df1bu, 0x2d02ef8du
    },
    {
        0x00000000u, 0x191b3141u, 0x32366282u, 0x2b2d53c3u, 0x646cc504u, 0x7d77f445u,
        0x565aa786u, 0x4f4196c7u, 0xc8d98a08u, 0xd1c2bb49u, 0xfaefe88au, 0xe3f4d9cbu,
        0xacb54f0cu, 0xb5ae7e4du, 0x9e832d8eu, 0x87981ccfu, 0x4ac21251u, 0x53d92310u,
        0x78f470d3u, 0x61ef4192u, 0x2eaed755u, 0x37b5e614u, 0x1c98b5d7u, 0x05838496u,
        0x821b9859u, 0x9b00a918u, 0xb02dfadbu, 0xa936cb9au, 0xe6775d5du, 0xff6c6c1cu,
        0xd4413fdfu, 0xcd5a0e9eu, 0x958424a2u, 0x8c9f15e3u, 0xa7b24620u, 0xbea97761u,
        0xf1e8e1a6u, 0xe8f3d0e7u, 0xc3de8324u, 0xdac5b265u, 0x5d5daeaau, 0x44469febu,
        0x6f6bcc28u, 0x7670fd69u, 0x39316baeu, 0x202a5aefu, 0x0b07092cu, 0x121c386du,
        0xdf4636f3u, 0xc65d07b2u, 0xed705471u, 0xf46b6530u, 0xbb2af3f7u, 0xa231c2b6u,
        0x891c9175u, 0x9007a034u, 0x179fbcfbu, 0x0e848dbau, 0x25a9de79u, 0x3cb2ef38u,
        0x73f379ffu, 0x6ae848beu, 0x41c51b7du, 0x58de2a3cu, 0xf0794f05u, 0xe9627e44u,
        0xc24f2d87u, 0xdb541cc6u, 0x94158a01u, 0x8d0ebb40u, 0xa623e883u, 0xbf38d9c2u,
        0x38a0c50du, 0x21bbf44cu, 0x0a96a78fu, 0x138d96ceu, 0x5ccc0009u, 0x45d73148u,
        0x6efa628bu, 0x77e153cau, 0xbabb5d54u, 0xa3a06c15u, 0x888d3fd6u, 0x91960e97u,
        0xded79850u, 0xc7cca911u, 0xece1fad2u, 0xf5facb93u, 0x7262d75cu, 0x6b79e61du,
        0x4054b5deu, 0x594f849fu, 0x160e1258u, 0x0f152319u, 0x243870dau, 0x3d23419bu,
        0x65fd6ba7u, 0x7ce65ae6u, 0x57cb0925u, 0x4ed03864u, 0x0191aea3u, 0x188a9fe2u,
        0x33a7cc21u, 0x2abcfd60u, 0xad24e1afu, 0xb43fd0eeu, 0x9f12832du, 0x8609b26cu,
        0xc94824abu, 0xd05315eau, 0xfb7e4629u, 0xe2657768u, 0x2f3f79f6u, 0x362448b7u,
        0x1d091b74u, 0x04122a35u, 0x4b53bcf2u, 0x52488db3u, 0x7965de70u, 0x607eef31u,
        0xe7e6f3feu, 0xfefdc2bfu, 0xd5d0917cu, 0xcccba03du, 0x838a36fau, 0x9a9107bbu,
        0xb1bc5478u, 0xa8a76539u, 0x3b83984bu, 0x2298a90au, 0x09b5fac9u, 0x10aecb88u,
        0x5fef5d4fu, 0x46f46c0eu, 0x6dd93fcdu, 0x74c20e8cu, 0xf35a1243u, 0xea412302u,
        0xc16c70c1u, 0xd8774180u, 0x9736d747u, 0x8e2de606u, 0xa500b5c5u, 0xbc1b8484u,
        0x71418a1au, 0x685abb5bu, 0x4377e898u, 0x5a6cd9d9u, 0x152d4f1eu, 0x0c367e5fu,
        0x271b2d9cu, 0x3e001cddu, 0xb9980012u, 0xa0833153u, 0x8bae6290u, 0x92b553d1u,
        0xddf4c516u, 0xc4eff457u, 0xefc2a794u, 0xf6d996d5u, 0xae07bce9u, 0xb71c8da8u,
        0x9c31de6bu, 0x852aef2au, 0xca6b79edu, 0xd37048acu, 0xf85d1b6fu, 0xe1462a2eu,
        0x66de36e1u, 0x7fc507a0u, 0x54e85463u, 0x4df36522u, 0x02b2f3e5u, 0x1ba9c2a4u,
        0x30849167u, 0x299fa026u, 0xe4c5aeb8u, 0xfdde9ff9u, 0xd6f3cc3au, 0xcfe8fd7bu,
        0x80a96bbcu, 0x99b25afdu, 0xb29f093eu, 0xab84387fu, 0x2c1c24b0u, 0x350715f1u,
        0x1e2a4632u, 0x07317773u, 0x4870e1b4u, 0x516bd0f5u, 0x7a468336u, 0x635db277u,
        0xcbfad74eu, 0xd2e1e60fu, 0xf9ccb5ccu, 0xe0d7848du, 0xaf96124au, 0xb68d230bu,
        0x9da070c8u, 0x84bb4189u, 0x03235d46u, 0x1a386c07u, 0x31153fc4u, 0x280e0e85u,
        0x674f9842u, 0x7e54a903u, 0x5579fac0u, 0x4c62cb81u, 0x8138c51fu, 0x9823f45eu,
        0xb30ea79du, 0xaa1596dcu, 0xe554001bu, 0xfc4f315au, 0xd7626299u, 0xce7953d8u,
        0x49e14f17u, 0x50fa7e56u, 0x7bd72d95u, 0x62cc1cd4u, 0x2d8d8a13u, 0x3496bb52u,
        0x1fbbe891u, 0x06a0d9d0u, 0x5e7ef3ecu, 0x4765c2adu, 0x6c48916eu, 0x7553a02fu,
        0x3a1236e8u, 0x230907a9u, 0x0824546au, 0x113f652bu, 0x96a779e4u, 0x8fbc48a5u,
        0xa4911b66u, 0xbd8a2a27u, 0xf2cbbce0u, 0xebd08da1u, 0xc0fdde62u, 0xd9e6ef23u,
        0x14bce1bdu, 0x0da7d0fcu, 0x268a833fu, 0x3f91b27eu, 0x70d024b9u, 0x69cb15f8u,
        0x42e6463bu, 0x5bfd777au, 0xdc656bb5u, 0xc57e5af4u, 0xee530937u, 0xf7483876u,
        0xb809aeb1u, 0xa1129ff0u, 0x8a3fcc33u, 0x9324fd72u
    },
    {
        0x00000000u, 0x01c26a37u, 0x0384d46eu, 0x0246be59u, 0x0709a8dcu, 0x06cbc2ebu,
        0x048d7cb2u, 0x054f1685u, 0x0e1351b8u, 0x0fd13b8fu, 0x0d9785d6u, 0x0c55efe1u,
        0x091af964u, 0x08d89353u, 0x0a9e2d0au, 0x0b5c473du, 0x1c26a370u, 0x1de4c947u,
        0x1fa2771eu, 0x1e601d29u, 0x1b2f0bacu, 0x1aed619bu, 0x18abdfc2u, 0x1969b5f5u,
        0x1235f2c8u, 0x13f798ffu, 0x11b126a6u, 0x10734c91u, 0x153c5a14u, 0x14fe3023u,
        0x16b88e7au, 0x177ae44du, 0x384d46e0u, 0x398f2cd7u, 0x3bc9928eu, 0x3a0bf8b9u,
        0x3f44ee3cu, 0x3e86840bu, 0x3cc03a52u, 0x3d025065u, 0x365e1758u, 0x379c7d6fu,
        0x35dac336u, 0x3418a901u, 0x3157bf84u, 0x3095d5b3u, 0x32d36beau, 0x331101ddu,
        0x246be590u, 0x25a98fa7u, 0x27ef31feu, 0x262d5bc9u, 0x23624d4cu, 0x22a0277bu,
        0x20e69922u, 0x2124f315u, 0x2a78b428u, 0x2bbade1fu, 0x29fc6046u, 0x283e0a71u,
        0x2d711cf4u, 0x2cb376c3u, 0x2ef5c89au, 0x2f37a2adu, 0x709a8dc0u, 0x7158e7f7u,
        0x731e59aeu, 0x72dc3399u, 0x7793251cu, 0x76514f2bu, 0x7417f172u, 0x75d59b45u,
        0x7e89dc78u, 0x7f4bb64fu, 0x7d0d0816u, 0x7ccf6221u, 0x798074a4u, 0x78421e93u,
        0x7a04a0cau, 0x7bc6cafdu, 0x6cbc2eb0u, 0x6d7e4487u, 0x6f38fadeu, 0x6efa90e9u,
        0x6bb5866cu, 0x6a77ec5bu, 0x68315202u, 0x69f33835u, 0x62af7f08u, 0x636d153fu,
        0x612bab66u, 0x60e9c151u, 0x65a6d7d4u, 0x6464bde3u, 0x662203bau, 0x67e0698du,
        0x48d7cb20u, 0x4915a117u, 0x4b531f4eu, 0x4a917579u, 0x4fde63fcu, 0x4e1c09cbu,
        0x4c5ab792u, 0x4d98dda5u, 0x46c49a98u, 0x4706f0afu, 0x45404ef6u, 0x448224c1u,
        0x41cd3244u, 0x400f5873u, 0x4249e62au, 0x438b8c1du, 0x54f16850u, 0x55330267u,
        0x5775bc3eu, 0x56b7d609u, 0x53f8c08cu, 0x523aaabbu, 0x507c14e2u, 0x51be7ed5u,
        0x5ae239e8u, 0x5b2053dfu, 0x5966ed86u, 0x58a487b1u, 0x5deb9134u, 0x5c29fb03u,
        0x5e6f455au, 0x5fad2f6du, 0xe1351b80u, 0xe0f771b7u, 0xe2b1cfeeu, 0xe373a5d9u,
        0xe63cb35cu, 0xe7fed96bu, 0xe5b86732u, 0xe47a0d05u, 0xef264a38u, 0xeee4200fu,
        0xeca29e56u, 0xed60f461u, 0xe82fe2e4u, 0xe9ed88d3u, 0xebab368au, 0xea695cbdu,
        0xfd13b8f0u, 0xfcd1d2c7u, 0xfe976c9eu, 0xff5506a9u, 0xfa1a102cu, 0xfbd87a1bu,
        0xf99ec442u, 0xf85cae75u, 0xf300e948u, 0xf2c2837fu, 0xf0843d26u, 0xf1465711u,
        0xf4094194u, 0xf5cb2ba3u, 0xf78d95fau, 0xf64fffcdu, 0xd9785d60u, 0xd8ba3757u,
        0xdafc890eu, 0xdb3ee339u, 0xde71f5bcu, 0xdfb39f8bu, 0xddf521d2u, 0xdc374be5u,
        0xd76b0cd8u, 0xd6a966efu, 0xd4efd8b6u, 0xd52db281u, 0xd062a404u, 0xd1a0ce33u,
        0xd3e6706au, 0xd2241a5du, 0xc55efe10u, 0xc49c9427u, 0xc6da2a7eu, 0xc7184049u,
        0xc25756ccu, 0xc3953cfbu, 0xc1d382a2u, 0xc011e895u, 0xcb4dafa8u, 0xca8fc59fu,
        0xc8c97bc6u, 0xc90b11f1u, 0xcc440774u, 0xcd866d43u, 0xcfc0d31au, 0xce02b92du,
        0x91af9640u, 0x906dfc77u, 0x922b422eu, 0x93e92819u, 0x96a63e9cu, 0x976454abu,
        0x9522eaf2u, 0x94e080c5u, 0x9fbcc7f8u, 0x9e7eadcfu, 0x9c381396u, 0x9dfa79a1u,
        0x98b56f24u, 0x99770513u, 0x9b31bb4au, 0x9af3d17du, 0x8d893530u, 0x8c4b5f07u,
        0x8e0de15eu, 0x8fcf8b69u, 0x8a809decu, 0x8b42f7dbu, 0x89044982u, 0x88c623b5u,
        0x839a6488u, 0x82580ebfu, 0x801eb0e6u, 0x81dcdad1u, 0x8493cc54u, 0x8551a663u,
        0x8717183au, 0x86d5720du, 0xa9e2d0a0u, 0xa820ba97u, 0xaa6604ceu, 0xaba46ef9u,
        0xaeeb787cu, 0xaf29124bu, 0xad6fac12u, 0xacadc625u, 0xa7f18118u, 0xa633eb2fu,
        0xa4755576u, 0xa5b73f41u, 0xa0f829c4u, 0xa13a43f3u, 0xa37cfdaau, 0xa2be979du,
        0xb5c473d0u, 0xb40619e7u, 0xb640a7beu, 0xb782cd89u, 0xb2cddb0cu, 0xb30fb13bu,
        0xb1490f62u, 0xb08b6555u, 0xbbd72268u, 0xba15485fu, 0xb853f606u, 0xb9919c31u,
        0xbcde8ab4u, 0xbd1ce083u, 0xbf5a5edau, 0xbe9834edu
    },
    {
        0x00000000u, 0xb8bc6765u, 0xaa09c88bu, 0x12b5afeeu, 0x8f629757u, 0x37def032u,
        0x256b5fdcu, 0x9dd738b9u, 0xc5b428efu, 0x7d084f8au, 0x6fbde064u, 0xd7018701u,
        0x4ad6bfb8u, 0xf26ad8ddu, 0xe0df7733u, 0x58631056u, 0x5019579fu, 0xe8a530fau,
        0xfa109f14u, 0x42acf871u, 0xdf7bc0c8u, 0x67c7a7adu, 0x75720843u, 0xcdce6f26u,
        0x95ad7f70u, 0x2d111815u, 0x3fa4b7fbu, 0x8718d09eu, 0x1acfe827u, 0xa2738f42u,
        0xb0c620acu, 0x087a47c9u, 0xa032af3eu, 0x188ec85bu, 0x0a3b67b5u, 0xb28700d0u,
        0x2f503869u, 0x97ec5f0cu, 0x8559f0e2u, 0x3de59787u, 0x658687d1u, 0xdd3ae0b4u,
        0xcf8f4f5au, 0x7733283fu, 0xeae41086u, 0x525877e3u, 0x40edd80du, 0xf851bf68u,
        0xf02bf8a1u, 0x48979fc4u, 0x5a22302au, 0xe29e574fu, 0x7f496ff6u, 0xc7f50893u,
        0xd540a77du, 0x6dfcc018u, 0x359fd04eu, 0x8d23b72bu, 0x9f9618c5u, 0x272a7fa0u,
        0xbafd4719u, 0x0241207cu, 0x10f48f92u, 0xa848e8f7u, 0x9b14583du, 0x23a83f58u,
        0x311d90b6u, 0x89a1f7d3u, 0x1476cf6au, 0xaccaa80fu, 0xbe7f07e1u, 0x06c36084u,
        0x5ea070d2u, 0xe61c17b7u, 0xf4a9b859u, 0x4c15df3cu, 0xd1c2e785u, 0x697e80e0u,
        0x7bcb2f0eu, 0xc377486bu, 0xcb0d0fa2u, 0x73b168c7u, 0x6104c729u, 0xd9b8a04cu,
        0x446f98f5u, 0xfcd3ff90u, 0xee66507eu, 0x56da371bu, 0x0eb9274du, 0xb6054028u,
        0xa4b0efc6u, 0x1c0c88a3u, 0x81dbb01au, 0x3967d77fu, 0x2bd27891u, 0x936e1ff4u,
        0x3b26f703u, 0x839a9066u, 0x912f3f88u, 0x299358edu, 0xb4446054u, 0x0cf80731u,
        0x1e4da8dfu, 0xa6f1cfbau, 0xfe92dfecu, 0x462eb889u, 0x549b1767u, 0xec277002u,
        0x71f048bbu, 0xc94c2fdeu, 0xdbf98030u, 0x6345e755u, 0x6b3fa09cu, 0xd383c7f9u,
        0xc1366817u, 0x798a0f72u, 0xe45d37cbu, 0x5ce150aeu, 0x4e54ff40u, 0xf6e89825u,
        0xae8b8873u, 0x1637ef16u, 0x048240f8u, 0xbc3e279du, 0x21e91f24u, 0x99557841u,
        0x8be0d7afu, 0x335cb0cau, 0xed59b63bu, 0x55e5d15eu, 0x47507eb0u, 0xffec19d5u,
        0x623b216cu, 0xda874609u, 0xc832e9e7u, 0x708e8e82u, 0x28ed9ed4u, 0x9051f9b1u,
        0x82e4565fu, 0x3a58313au, 0xa78f0983u, 0x1f336ee6u, 0x0d86c108u, 0xb53aa66du,
        0xbd40e1a4u, 0x05fc86c1u, 0x1749292fu, 0xaff54e4au, 0x322276f3u, 0x8a9e1196u,
        0x982bbe78u, 0x2097d91du, 0x78f4c94bu, 0xc048ae2eu, 0xd2fd01c0u, 0x6a4166a5u,
        0xf7965e1cu, 0x4f2a3979u, 0x5d9f9697u, 0xe523f1f2u, 0x4d6b1905u, 0xf5d77e60u,
        0xe762d18eu, 0x5fdeb6ebu, 0xc2098e52u, 0x7ab5e937u, 0x680046d9u, 0xd0bc21bcu,
        0x88df31eau, 0x3063568fu, 0x22d6f961u, 0x9a6a9e04u, 0x07bda6bdu, 0xbf01c1d8u,
        0xadb46e36u, 0x15080953u, 0x1d724e9au, 0xa5ce29ffu, 0xb77b8611u, 0x0fc7e174u,
        0x9210d9cdu, 0x2aacbea8u, 0x38191146u, 0x80a57623u, 0xd8c66675u, 0x607a0110u,
        0x72cfaefeu, 0xca73c99bu, 0x57a4f122u, 0xef189647u, 0xfdad39a9u, 0x45115eccu,
        0x764dee06u, 0xcef18963u, 0xdc44268du, 0x64f841e8u, 0xf92f7951u, 0x41931e34u,
        0x5326b1dau, 0xeb9ad6bfu, 0xb3f9c6e9u, 0x0b45a18cu, 0x19f00e62u, 0xa14c6907u,
        0x3c9b51beu, 0x842736dbu, 0x96929935u, 0x2e2efe50u, 0x2654b999u, 0x9ee8defcu,
        0x8c5d7112u, 0x34e11677u, 0xa9362eceu, 0x118a49abu, 0x033fe645u, 0xbb838120u,
        0xe3e09176u, 0x5b5cf613u, 0x49e959fdu, 0xf1553e98u, 0x6c820621u, 0xd43e6144u,
        0xc68bceaau, 0x7e37a9cfu, 0xd67f4138u, 0x6ec3265du, 0x7c7689b3u, 0xc4caeed6u,
        0x591dd66fu, 0xe1a1b10au, 0xf3141ee4u, 0x4ba87981u, 0x13cb69d7u, 0xab770eb2u,
        0xb9c2a15cu, 0x017ec639u, 0x9ca9fe80u, 0x241599e5u, 0x36a0360bu, 0x8e1c516eu,
        0x866616a7u, 0x3eda71c2u, 0x2c6fde2cu, 0x94d3b949u, 0x090481f0u, 0xb1b8e695u,
        0xa30d497bu, 0x1bb12e1eu, 0x43d23e48u, 0xfb6e592du, 0xe9dbf6c3u, 0x516791a6u,
        0xccb0a91fu, 0x740cce7au, 0x66b96194u, 0xde0506f1u
    },
    {
        0x00000000u, 0x3d6029b0u, 0x7ac05360u, 0x47a07ad0u, 0xf580a6c0u, 0xc8e08f70u,
        0x8f40f5a0u, 0xb220dc10u, 0x30704bc1u, 0x0d106271u, 0x4ab018a1u, 0x77d03111u,
        0xc5f0ed01u, 0xf890c4b1u, 0xbf30be61u, 0x825097d1u, 0x60e09782u, 0x5d80be32u,
        0x1a20c4e2u, 0x2740ed52u, 0x95603142u, 0xa80018f2u, 0xefa06222u, 0xd2c04b92u,
        0x5090dc43u, 0x6df0f5f3u, 0x2a508f23u, 0x1730a693u, 0xa5107a83u, 0x98705333u,
        0xdfd029e3u, 0xe2b00053u, 0xc1c12f04u, 0xfca106b4u, 0xbb017c64u, 0x866155d4u,
        0x344189c4u, 0x0921a074u, 0x4e81daa4u, 0x73e1f314u, 0xf1b164c5u, 0xccd14d75u,
        0x8b7137a5u, 0xb6111e15u, 0x0431c205u, 0x3951ebb5u, 0x7ef19165u, 0x4391b8d5u,
        0xa121b886u, 0x9c419136u, 0xdbe1ebe6u, 0xe681c256u, 0x54a11e46u, 0x69c137f6u,
        0x2e614d26u, 0x13016496u, 0x9151f347u, 0xac31daf7u, 0xeb91a027u, 0xd6f18997u,
        0x64d15587u, 0x59b17c37u, 0x1e1106e7u, 0x23712f57u, 0x58f35849u, 0x659371f9u,
        0x22330b29u, 0x1f532299u, 0xad73fe89u, 0x9013d739u, 0xd7b3ade9u, 0xead38459u,
        0x68831388u, 0x55e33a38u, 0x124340e8u, 0x2f236958u, 0x9d03b548u, 0xa0639cf8u,
        0xe7c3e628u, 0xdaa3cf98u, 0x3813cfcbu, 0x0573e67bu, 0x42d39cabu, 0x7fb3b51bu,
        0xcd93690bu, 0xf0f340bbu, 0xb7533a6bu, 0x8a3313dbu, 0x0863840au, 0x3503adbau,
        0x72a3d76au, 0x4fc3fedau, 0xfde322cau, 0xc0830b7au, 0x872371aau, 0xba43581au,
        0x9932774du, 0xa4525efdu, 0xe3f2242du, 0xde920d9du, 0x6cb2d18du, 0x51d2f83du,
        0x167282edu, 0x2b12ab5du, 0xa9423c8cu, 0x9422153cu, 0xd3826fecu, 0xeee2465cu,
        0x5cc29a4cu, 0x61a2b3fcu, 0x2602c92cu, 0x1b62e09cu, 0xf9d2e0cfu, 0xc4b2c97fu,
        0x8312b3afu, 0xbe729a1fu, 0x0c52460fu, 0x31326fbfu, 0x7692156fu, 0x4bf23cdfu,
        0xc9a2ab0eu, 0xf4c282beu, 0xb362f86eu, 0x8e02d1deu, 0x3c220dceu, 0x0142247eu,
        0x46e25eaeu, 0x7b82771eu, 0xb1e6b092u, 0x8c869922u, 0xcb26e3f2u, 0xf646ca42u,
        0x44661652u, 0x79063fe2u, 0x3ea64532u, 0x03c66c82u, 0x8196fb53u, 0xbcf6d2e3u,
        0xfb56a833u, 0xc6368183u, 0x74165d93u, 0x49767423u, 0x0ed60ef3u, 0x33b62743u,
        0xd1062710u, 0xec660ea0u, 0xabc67470u, 0x96a65dc0u, 0x248681d0u, 0x19e6a860u,
        0x5e46d2b0u, 0x6326fb00u, 0xe1766cd1u, 0xdc164561u, 0x9bb63fb1u, 0xa6d61601u,
        0x14f6ca11u, 0x2996e3a1u, 0x6e369971u, 0x5356b0c1u, 0x70279f96u, 0x4d47b626u,
        0x0ae7ccf6u, 0x3787e546u, 0x85a73956u, 0xb8c710e6u, 0xff676a36u, 0xc2074386u,
        0x4057d457u, 0x7d37fde7u, 0x3a978737u, 0x07f7ae87u, 0xb5d77297u, 0x88b75b27u,
        0xcf1721f7u, 0xf2770847u, 0x10c70814u, 0x2da721a4u, 0x6a075b74u, 0x576772c4u,
        0xe547aed4u, 0xd8278764u, 0x9f87fdb4u, 0xa2e7d404u, 0x20b743d5u, 0x1dd76a65u,
        0x5a7710b5u, 0x67173905u, 0xd537e515u, 0xe857cca5u, 0xaff7b675u, 0x92979fc5u,
        0xe915e8dbu, 0xd475c16bu, 0x93d5bbbbu, 0xaeb5920bu, 0x1c954e1bu, 0x21f567abu,
        0x66551d7bu, 0x5b3534cbu, 0xd965a31au, 0xe4058aaau, 0xa3a5f07au, 0x9ec5d9cau,
        0x2ce505dau, 0x11852c6au, 0x562556bau, 0x6b457f0au, 0x89f57f59u, 0xb49556e9u,
        0xf3352c39u, 0xce550589u, 0x7c75d999u, 0x4115f029u, 0x06b58af9u, 0x3bd5a349u,
        0xb9853498u, 0x84e51d28u, 0xc34567f8u, 0xfe254e48u, 0x4c059258u, 0x7165bbe8u,
        0x36c5c138u, 0x0ba5e888u, 0x28d4c7dfu, 0x15b4ee6fu, 0x521494bfu, 0x6f74bd0fu,
        0xdd54611fu, 0xe03448afu, 0xa794327fu, 0x9af41bcfu, 0x18a48c1eu, 0x25c4a5aeu,
        0x6264df7eu, 0x5f04f6ceu, 0xed242adeu, 0xd044036eu, 0x97e479beu, 0xaa84500eu,
        0x4834505du, 0x755479edu, 0x32f4033du, 0x0f942a8du, 0xbdb4f69du, 0x80d4df2du,
        0xc774a5fdu, 0xfa148c4du, 0x78441b9cu, 0x4524322cu, 0x028448fcu, 0x3fe4614cu,
        0x8dc4bd5cu, 0xb0a494ecu, 0xf704ee3cu, 0xca64c78cu
    },
    {
        0x00000000u, 0xcb5cd3a5u, 0x4dc8a10bu, 0x869472aeu, 0x9b914216u, 0x50cd91b3u,
        0xd659e31du, 0x1d0530b8u, 0xec53826du, 0x270f51c8u, 0xa19b2366u, 0x6ac7f0c3u,
        0x77c2c07bu, 0xbc9e13deu, 0x3a0a6170u, 0xf156b2d5u, 0x03d6029bu, 0xc88ad13eu,
        0x4e1ea390u, 0x85427035u, 0x9847408du, 0x531b9328u, 0xd58fe186u, 0x1ed33223u,
        0xef8580f6u, 0x24d95353u, 0xa24d21fdu, 0x6911f258u, 0x7414c2e0u, 0xbf481145u,
        0x39dc63ebu, 0xf280b04eu, 0x07ac0536u, 0xccf0d693u, 0x4a64a43du, 0x81387798u,
        0x9c3d4720u, 0x57619485u, 0xd1f5e62bu, 0x1aa9358eu, 0xebff875bu, 0x20a354feu,
        0xa6372650u, 0x6d6bf5f5u, 0x706ec54du, 0xbb3216e8u, 0x3da66446u, 0xf6fab7e3u,
        0x047a07adu, 0xcf26d408u, 0x49b2a6a6u, 0x82ee7503u, 0x9feb45bbu, 0x54b7961eu,
        0xd223e4b0u, 0x197f3715u, 0xe82985c0u, 0x23755665u, 0xa5e124cbu, 0x6ebdf76eu,
        0x73b8c7d6u, 0xb8e41473u, 0x3e7066ddu, 0xf52cb578u, 0x0f580a6cu, 0xc404d9c9u,
        0x4290ab67u, 0x89cc78c2u, 0x94c9487au, 0x5f959bdfu, 0xd901e971u, 0x125d3ad4u,
        0xe30b8801u, 0x28575ba4u, 0xaec3290au, 0x659ffaafu, 0x789aca17u, 0xb3c619b2u,
        0x35526b1cu, 0xfe0eb8b9u, 0x0c8e08f7u, 0xc7d2db52u, 0x4146a9fcu, 0x8a1a7a59u,
        0x971f4ae1u, 0x5c439944u, 0xdad7ebeau, 0x118b384fu, 0xe0dd8a9au, 0x2b81593fu,
        0xad152b91u, 0x6649f834u, 0x7b4cc88cu, 0xb0101b29u, 0x36846987u, 0xfdd8ba22u,
        0x08f40f5au, 0xc3a8dcffu, 0x453cae51u, 0x8e607df4u, 0x93654d4cu, 0x58399ee9u,
        0xdeadec47u, 0x15f13fe2u, 0xe4a78d37u, 0x2ffb5e92u, 0xa96f2c3cu, 0x6233ff99u,
        0x7f36cf21u, 0xb46a1c84u, 0x32fe6e2au, 0xf9a2bd8fu, 0x0b220dc1u, 0xc07ede64u,
        0x46eaaccau, 0x8db67f6fu, 0x90b34fd7u, 0x5bef9c72u, 0xdd7beedcu, 0x16273d79u,
        0xe7718facu, 0x2c2d5c09u, 0xaab92ea7u, 0x61e5fd02u, 0x7ce0cdbau, 0xb7bc1e1fu,
        0x31286cb1u, 0xfa74bf14u, 0x1eb014d8u, 0xd5ecc77du, 0x5378b5d3u, 0x98246676u,
        0x852156ceu, 0x4e7d856bu, 0xc8e9f7c5u, 0x03b52460u, 0xf2e396b5u, 0x39bf4510u,
        0xbf2b37beu, 0x7477e41bu, 0x6972d4a3u, 0xa22e0706u, 0x24ba75a8u, 0xefe6a60du,
        0x1d661643u, 0xd63ac5e6u, 0x50aeb748u, 0x9bf264edu, 0x86f75455u, 0x4dab87f0u,
        0xcb3ff55eu, 0x006326fbu, 0xf135942eu, 0x3a69478bu, 0xbcfd3525u, 0x77a1e680u,
        0x6aa4d638u, 0xa1f8059du, 0x276c7733u, 0xec30a496u, 0x191c11eeu, 0xd240c24bu,
        0x54d4b0e5u, 0x9f886340u, 0x828d53f8u, 0x49d1805du, 0xcf45f2f3u, 0x04192156u,
        0xf54f9383u, 0x3e134026u, 0xb8873288u, 0x73dbe12du, 0x6eded195u, 0xa5820230u,
        0x2316709eu, 0xe84aa33bu, 0x1aca1375u, 0xd196c0d0u, 0x5702b27eu, 0x9c5e61dbu,
        0x815b5163u, 0x4a0782c6u, 0xcc93f068u, 0x07cf23cdu, 0xf6999118u, 0x3dc542bdu,
        0xbb513013u, 0x700de3b6u, 0x6d08d30eu, 0xa65400abu, 0x20c07205u, 0xeb9ca1a0u,
        0x11e81eb4u, 0xdab4cd11u, 0x5c20bfbfu, 0x977c6c1au, 0x8a795ca2u, 0x41258f07u,
        0xc7b1fda9u, 0x0ced2e0cu, 0xfdbb9cd9u, 0x36e74f7cu, 0xb0733dd2u, 0x7b2fee77u,
        0x662adecfu, 0xad760d6au, 0x2be27fc4u, 0xe0beac61u, 0x123e1c2fu, 0xd962cf8au,
        0x5ff6bd24u, 0x94aa6e81u, 0x89af5e39u, 0x42f38d9cu, 0xc467ff32u, 0x0f3b2c97u,
        0xfe6d9e42u, 0x35314de7u, 0xb3a53f49u, 0x78f9ececu, 0x65fcdc54u, 0xaea00ff1u,
        0x28347d5fu, 0xe368aefau, 0x16441b82u, 0xdd18c827u, 0x5b8cba89u, 0x90d0692cu,
        0x8dd55994u, 0x46898a31u, 0xc01df89fu, 0x0b412b3au, 0xfa1799efu, 0x314b4a4au,
        0xb7df38e4u, 0x7c83eb41u, 0x6186dbf9u, 0xaada085cu, 0x2c4e7af2u, 0xe712a957u,
        0x15921919u, 0xdececabcu, 0x585ab812u, 0x93066bb7u, 0x8e035b0fu, 0x455f88aau,
        0xc3cbfa04u, 0x089729a1u, 0xf9c19b74u, 0x329d48d1u, 0xb4093a7fu, 0x7f55e9dau,
        0x6250d962u, 0xa90c0ac7u, 0x2f987869u, 0xe4c4abccu
    },
    {
        0x00000000u, 0xa6770bb4u, 0x979f1129u, 0x31e81a9du, 0xf44f2413u, 0x52382fa7u,
        0x63d0353au, 0xc5a73e8eu, 0x33ef4e67u, 0x959845d3u, 0xa4705f4eu, 0x020754fau,
        0xc7a06a74u, 0x61d761c0u, 0x503f7b5du, 0xf64870e9u, 0x67de9cceu, 0xc1a9977au,
        0xf0418de7u, 0x56368653u, 0x9391b8ddu, 0x35e6b369u, 0x040ea9f4u, 0xa279a240u,
        0x5431d2a9u, 0xf246d91du, 0xc3aec380u, 0x65d9c834u, 0xa07ef6bau, 0x0609fd0eu,
        0x37e1e793u, 0x9196ec27u, 0xcfbd399cu, 0x69ca3228u, 0x582228b5u, 0xfe552301u,
        0x3bf21d8fu, 0x9d85163bu, 0xac6d0ca6u, 0x0a1a0712u, 0xfc5277fbu, 0x5a257c4fu,
        0x6bcd66d2u, 0xcdba6d66u, 0x081d53e8u, 0xae6a585cu, 0x9f8242c1u, 0x39f54975u,
        0xa863a552u, 0x0e14aee6u, 0x3ffcb47bu, 0x998bbfcfu, 0x5c2c8141u, 0xfa5b8af5u,
        0xcbb39068u, 0x6dc49bdcu, 0x9b8ceb35u, 0x3dfbe081u, 0x0c13fa1cu, 0xaa64f1a8u,
        0x6fc3cf26u, 0xc9b4c492u, 0xf85cde0fu, 0x5e2bd5bbu, 0x440b7579u, 0xe27c7ecdu,
        0xd3946450u, 0x75e36fe4u, 0xb044516au, 0x16335adeu, 0x27db4043u, 0x81ac4bf7u,
        0x77e43b1eu, 0xd19330aau, 0xe07b2a37u, 0x460c2183u, 0x83ab1f0du, 0x25dc14b9u,
        0x14340e24u, 0xb2430590u, 0x23d5e9b7u, 0x85a2e203u, 0xb44af89eu, 0x123df32au,
        0xd79acda4u, 0x71edc610u, 0x4005dc8du, 0xe672d739u, 0x103aa7d0u, 0xb64dac64u,
        0x87a5b6f9u, 0x21d2bd4du, 0xe47583c3u, 0x42028877u, 0x73ea92eau, 0xd59d995eu,
        0x8bb64ce5u, 0x2dc14751u, 0x1c295dccu, 0xba5e5678u, 0x7ff968f6u, 0xd98e6342u,
        0xe86679dfu, 0x4e11726bu, 0xb8590282u, 0x1e2e0936u, 0x2fc613abu, 0x89b1181fu,
        0x4c162691u, 0xea612d25u, 0xdb8937b8u, 0x7dfe3c0cu, 0xec68d02bu, 0x4a1fdb9fu,
        0x7bf7c102u, 0xdd80cab6u, 0x1827f438u, 0xbe50ff8cu, 0x8fb8e511u, 0x29cfeea5u,
        0xdf879e4cu, 0x79f095f8u, 0x48188f65u, 0xee6f84d1u, 0x2bc8ba5fu, 0x8dbfb1ebu,
        0xbc57ab76u, 0x1a20a0c2u, 0x8816eaf2u, 0x2e61e146u, 0x1f89fbdbu, 0xb9fef06fu,
        0x7c59cee1u, 0xda2ec555u, 0xebc6dfc8u, 0x4db1d47cu, 0xbbf9a495u, 0x1d8eaf21u,
        0x2c66b5bcu, 0x8a11be08u, 0x4fb68086u, 0xe9c18b32u, 0xd82991afu, 0x7e5e9a1bu,
        0xefc8763cu, 0x49bf7d88u, 0x78576715u, 0xde206ca1u, 0x1b87522fu, 0xbdf0599bu,
        0x8c184306u, 0x2a6f48b2u, 0xdc27385bu, 0x7a5033efu, 0x4bb82972u, 0xedcf22c6u,
        0x28681c48u, 0x8e1f17fcu, 0xbff70d61u, 0x198006d5u, 0x47abd36eu, 0xe1dcd8dau,
        0xd034c247u, 0x7643c9f3u, 0xb3e4f77du, 0x1593fcc9u, 0x247be654u, 0x820cede0u,
        0x74449d09u, 0xd23396bdu, 0xe3db8c20u, 0x45ac8794u, 0x800bb91au, 0x267cb2aeu,
        0x1794a833u, 0xb1e3a387u, 0x20754fa0u, 0x86024414u, 0xb7ea5e89u, 0x119d553du,
        0xd43a6bb3u, 0x724d6007u, 0x43a57a9au, 0xe5d2712eu, 0x139a01c7u, 0xb5ed0a73u,
        0x840510eeu, 0x22721b5au, 0xe7d525d4u, 0x41a22e60u, 0x704a34fdu, 0xd63d3f49u,
        0xcc1d9f8bu, 0x6a6a943fu, 0x5b828ea2u, 0xfdf58516u, 0x3852bb98u, 0x9e25b02cu,
        0xafcdaab1u, 0x09baa105u, 0xfff2d1ecu, 0x5985da58u, 0x686dc0c5u, 0xce1acb71u,
        0x0bbdf5ffu, 0xadcafe4bu, 0x9c22e4d6u, 0x3a55ef62u, 0xabc30345u, 0x0db408f1u,
        0x3c5c126cu, 0x9a2b19d8u, 0x5f8c2756u, 0xf9fb2ce2u, 0xc813367fu, 0x6e643dcbu,
        0x982c4d22u, 0x3e5b4696u, 0x0fb35c0bu, 0xa9c457bfu, 0x6c636931u, 0xca146285u,
        0xfbfc7818u, 0x5d8b73acu, 0x03a0a617u, 0xa5d7ada3u, 0x943fb73eu, 0x3248bc8au,
        0xf7ef8204u, 0x519889b0u, 0x6070932du, 0xc6079899u, 0x304fe870u, 0x9638e3c4u,
        0xa7d0f959u, 0x01a7f2edu, 0xc400cc63u, 0x6277c7d7u, 0x539fdd4au, 0xf5e8d6feu,
        0x647e3ad9u, 0xc209316du, 0xf3e12bf0u, 0x55962044u, 0x90311ecau, 0x3646157eu,
        0x07ae0fe3u, 0xa1d90457u, 0x579174beu, 0xf1e67f0au, 0xc00e6597u, 0x66796e23u,
        0xa3de50adu, 0x05a95b19u, 0x34414184u, 0x92364a30u
    },
    {
        0x00000000u, 0xccaa009eu, 0x4225077du, 0x8e8f07e3u, 0x844a0efau, 0x48e00e64u,
        0xc66f0987u, 0x0ac50919u, 0xd3e51bb5u, 0x1f4f1b2bu, 0x91c01cc8u, 0x5d6a1c56u,
        0x57af154fu, 0x9b0515d1u, 0x158a1232u, 0xd92012acu, 0x7cbb312bu, 0xb01131b5u,
        0x3e9e3656u, 0xf23436c8u, 0xf8f13fd1u, 0x345b3f4fu, 0xbad438acu, 0x767e3832u,
        0xaf5e2a9eu, 0x63f42a00u, 0xed7b2de3u, 0x21d12d7du, 0x2b142464u, 0xe7be24fau,
        0x69312319u, 0xa59b2387u, 0xf9766256u, 0x35dc62c8u, 0xbb53652bu, 0x77f965b5u,
        0x7d3c6cacu, 0xb1966c32u, 0x3f196bd1u, 0xf3b36b4fu, 0x2a9379e3u, 0xe639797du,
        0x68b67e9eu, 0xa41c7e00u, 0xaed97719u, 0x62737787u, 0xecfc7064u, 0x205670fau,
        0x85cd537du, 0x496753e3u, 0xc7e85400u, 0x0b42549eu, 0x01875d87u, 0xcd2d5d19u,
        0x43a25afau, 0x8f085a64u, 0x562848c8u, 0x9a824856u, 0x140d4fb5u, 0xd8a74f2bu,
        0xd2624632u, 0x1ec846acu, 0x9047414fu, 0x5ced41d1u, 0x299dc2edu, 0xe537c273u,
        0x6bb8c590u, 0xa712c50eu, 0xadd7cc17u, 0x617dcc89u, 0xeff2cb6au, 0x2358cbf4u,
        0xfa78d958u, 0x36d2d9c6u, 0xb85dde25u, 0x74f7debbu, 0x7e32d7a2u, 0xb298d73cu,
        0x3c17d0dfu, 0xf0bdd041u, 0x5526f3c6u, 0x998cf358u, 0x1703f4bbu, 0xdba9f425u,
        0xd16cfd3cu, 0x1dc6fda2u, 0x9349fa41u, 0x5fe3fadfu, 0x86c3e873u, 0x4a69e8edu,
        0xc4e6ef0eu, 0x084cef90u, 0x0289e689u, 0xce23e617u, 0x40ace1f4u, 0x8c06e16au,
        0xd0eba0bbu, 0x1c41a025u, 0x92cea7c6u, 0x5e64a758u, 0x54a1ae41u, 0x980baedfu,
        0x1684a93cu, 0xda2ea9a2u, 0x030ebb0eu, 0xcfa4bb90u, 0x412bbc73u, 0x8d81bcedu,
        0x8744b5f4u, 0x4beeb56au, 0xc561b289u, 0x09cbb217u, 0xac509190u, 0x60fa910eu,
        0xee7596edu, 0x22df9673u, 0x281a9f6au, 0xe4b09ff4u, 0x6a3f9817u, 0xa6959889u,
        0x7fb58a25u, 0xb31f8abbu, 0x3d908d58u, 0xf13a8dc6u, 0xfbff84dfu, 0x37558441u,
        0xb9da83a2u, 0x7570833cu, 0x533b85dau, 0x9f918544u, 0x111e82a7u, 0xddb48239u,
        0xd7718b20u, 0x1bdb8bbeu, 0x95548c5du, 0x59fe8cc3u, 0x80de9e6fu, 0x4c749ef1u,
        0xc2fb9912u, 0x0e51998cu, 0x04949095u, 0xc83e900bu, 0x46b197e8u, 0x8a1b9776u,
        0x2f80b4f1u, 0xe32ab46fu, 0x6da5b38cu, 0xa10fb312u, 0xabcaba0bu, 0x6760ba95u,
        0xe9efbd76u, 0x2545bde8u, 0xfc65af44u, 0x30cfafdau, 0xbe40a839u, 0x72eaa8a7u,
        0x782fa1beu, 0xb485a120u, 0x3a0aa6c3u, 0xf6a0a65du, 0xaa4de78cu, 0x66e7e712u,
        0xe868e0f1u, 0x24c2e06fu, 0x2e07e976u, 0xe2ade9e8u, 0x6c22ee0bu, 0xa088ee95u,
        0x79a8fc39u, 0xb502fca7u, 0x3b8dfb44u, 0xf727fbdau, 0xfde2f2c3u, 0x3148f25du,
        0xbfc7f5beu, 0x736df520u, 0xd6f6d6a7u, 0x1a5cd639u, 0x94d3d1dau, 0x5879d144u,
        0x52bcd85du, 0x9e16d8c3u, 0x1099df20u, 0xdc33dfbeu, 0x0513cd12u, 0xc9b9cd8cu,
        0x4736ca6fu, 0x8b9ccaf1u, 0x8159c3e8u, 0x4df3c376u, 0xc37cc495u, 0x0fd6c40bu,
        0x7aa64737u, 0xb60c47a9u, 0x3883404au, 0xf42940d4u, 0xfeec49cdu, 0x32464953u,
        0xbcc94eb0u, 0x70634e2eu, 0xa9435c82u, 0x65e95c1cu, 0xeb665bffu, 0x27cc5b61u,
        0x2d095278u, 0xe1a352e6u, 0x6f2c5505u, 0xa386559bu, 0x061d761cu, 0xcab77682u,
        0x44387161u, 0x889271ffu, 0x825778e6u, 0x4efd7878u, 0xc0727f9bu, 0x0cd87f05u,
        0xd5f86da9u, 0x19526d37u, 0x97dd6ad4u, 0x5b776a4au, 0x51b26353u, 0x9d1863cdu,
        0x1397642eu, 0xdf3d64b0u, 0x83d02561u, 0x4f7a25ffu, 0xc1f5221cu, 0x0d5f2282u,
        0x079a2b9bu, 0xcb302b05u, 0x45bf2ce6u, 0x89152c78u, 0x50353ed4u, 0x9c9f3e4au,
        0x121039a9u, 0xdeba3937u, 0xd47f302eu, 0x18d530b0u, 0x965a3753u, 0x5af037cdu,
        0xff6b144au, 0x33c114d4u, 0xbd4e1337u, 0x71e413a9u, 0x7b211ab0u, 0xb78b1a2eu,
        0x39041dcdu, 0xf5ae1d53u, 0x2c8e0fffu, 0xe0240f61u, 0x6eab0882u, 0xa201081cu,
        0xa8c40105u, 0x646e019bu, 0xeae10678u, 0x264b06e6u
    }
};

static fr_u32 fr__le32(const unsigned char *p)
{
    return (fr_u32)p[0] | ((fr_u32)p[1] << 8) | ((fr_u32)p[2] << 16) | ((fr_u32)p[3] << 24);
}

/* a * b mod P for CRC-32 register values (reflected: bit 31 is x^0). */
static fr_u32 fr__crc_mul(fr_u32 a, fr_u32 b)
{
    fr_u32 product = 0;
    int i;
    for (i = 31; i >= 0; i--) {
        if ((a >> i) & 1)
            product ^= b;
        b = (b & 1) ? (b >> 1) ^ 0xedb88320u : b >> 1;  /* b *= x */
    }
    return product;
}

/* fr__crc_powers[k] = x^(8 * 2^k) mod P: what 2^k zero bytes do to a CRC register (each the square of the
   one before, starting from x^8). Constant, so joining the four lanes below costs a few multiplications. */
static const fr_u32 fr__crc_powers[64] = {
    0x00800000u, 0x00008000u, 0xedb88320u, 0xb1e6b092u, 0xa06a2517u, 0xed627daeu,
    0x88d14467u, 0xd7bbfe6au, 0xec447f11u, 0x8e7ea170u, 0x6427800eu, 0x4d47bae0u,
    0x09fe548fu, 0x83852d0fu, 0x30362f1au, 0x7b5a9cc3u, 0x31fec169u, 0x9fec022au,
    0x6c8dedc4u, 0x15d6874du, 0x5fde7a4eu, 0xbad90e37u, 0x2e4e5eefu, 0x4eaba214u,
    0xa8a472c0u, 0x429a969eu, 0x148d302au, 0xc40ba6d0u, 0xc4e22c3cu, 0x40000000u,
    0x20000000u, 0x08000000u, 0x00800000u, 0x00008000u, 0xedb88320u, 0xb1e6b092u,
    0xa06a2517u, 0xed627daeu, 0x88d14467u, 0xd7bbfe6au, 0xec447f11u, 0x8e7ea170u,
    0x6427800eu, 0x4d47bae0u, 0x09fe548fu, 0x83852d0fu, 0x30362f1au, 0x7b5a9cc3u,
    0x31fec169u, 0x9fec022au, 0x6c8dedc4u, 0x15d6874du, 0x5fde7a4eu, 0xbad90e37u,
    0x2e4e5eefu, 0x4eaba214u, 0xa8a472c0u, 0x429a969eu, 0x148d302au, 0xc40ba6d0u,
    0xc4e22c3cu, 0x40000000u, 0x20000000u, 0x08000000u
};

/* x^(8n) mod P: what n zero bytes do to a CRC register. */
static fr_u32 fr__crc_shift(fr_size n)
{
    fr_u32 result = 0x80000000u;  /* x^0 */
    int k;
    for (k = 0; n != 0; n >>= 1, k++)
        if (n & 1)
            result = fr__crc_mul(result, fr__crc_powers[k]);
    return result;
}

/* Eight bytes into a CRC register, one look-up per byte from the row for the bytes that follow it. */
#define FR__CRC_STEP(reg, p)                                                                               \
    do {                                                                                                   \
        fr_u32 lo_ = (reg) ^ fr__le32(p), hi_ = fr__le32((p) + 4);                                         \
        (reg) = fr__crc_table[7][lo_ & 0xff] ^ fr__crc_table[6][(lo_ >> 8) & 0xff] ^                       \
                fr__crc_table[5][(lo_ >> 16) & 0xff] ^ fr__crc_table[4][lo_ >> 24] ^                       \
                fr__crc_table[3][hi_ & 0xff] ^ fr__crc_table[2][(hi_ >> 8) & 0xff] ^                       \
                fr__crc_table[1][(hi_ >> 16) & 0xff] ^ fr__crc_table[0][hi_ >> 24];                        \
    } while (0)

/* The CRC register (inverted) after size bytes. From 4 KiB on (a page: what a driver streams), four
   quarters at once, so the table look-ups of four independent registers overlap instead of waiting on one
   chain. The register is linear in its start value, so the quarters join as
   reg(A|B) = reg_A * x^(8|B|) ^ reg_B(started at 0), zlib's crc32_combine. Then 8 bytes a step, then
   bytes. Byte loads assembled little-endian: the same on any host, and compilers turn them into one load. */
static fr_u32 fr__crc_run(fr_u32 reg, const unsigned char *p, fr_size size)
{
    if (size >= 4096) {
        fr_size quarter = (size >> 2) & ~(fr_size)7, k;
        fr_u32 a = reg, b = 0, c = 0, d = 0, shift;
        for (k = 0; k < quarter; k += 8) {
            FR__CRC_STEP(a, p + k);
            FR__CRC_STEP(b, p + quarter + k);
            FR__CRC_STEP(c, p + 2 * quarter + k);
            FR__CRC_STEP(d, p + 3 * quarter + k);
        }
        shift = fr__crc_shift(quarter);
        reg = fr__crc_mul(shift, fr__crc_mul(shift, fr__crc_mul(shift, a) ^ b) ^ c) ^ d;
        p += 4 * quarter;
        size -= 4 * quarter;
    }
    for (; size >= 8; p += 8, size -= 8)
        FR__CRC_STEP(reg, p);
    while (size--)
        reg = fr__crc_table[0][(reg ^ *p++) & 0xff] ^ (reg >> 8);
    return reg;
}
#undef FR__CRC_STEP

/* The xor-fold's two halves over size bytes starting at a multiple of 8 from the buffer's start: bytes 0-3
   of every 8-byte word into fold[0], bytes 4-7 into fold[1], the trailing partial word zero-extended. */
static void fr__fold(fr_u32 *fold, const unsigned char *p, fr_size size)
{
    fr_u32 lo = 0, hi = 0;
    fr_size i;
    for (; size >= 8; p += 8, size -= 8) {
        lo ^= fr__le32(p);
        hi ^= fr__le32(p + 4);
    }
    for (i = 0; i < size; i++) {
        if (i < 4)
            lo ^= (fr_u32)p[i] << (8 * i);
        else
            hi ^= (fr_u32)p[i] << (8 * (i - 4));
    }
    fold[0] ^= lo;
    fold[1] ^= hi;
}

fr_u32 fr_crc32(fr_u32 crc, const void *data, fr_size size)
{
    if (data == 0)
        return crc;  /* like zlib: crc32(crc, Z_NULL, n) changes nothing */
    return ~fr__crc_run(~crc, (const unsigned char *)data, size);
}

fr_u64 fr_xorfold64(const void *data, fr_size size)
{
    fr_u32 fold[2] = {0, 0};
    if (data == 0)
        return 0;
    fr__fold(fold, (const unsigned char *)data, size);
    return ((fr_u64)fold[1] << 32) | fold[0];
}

/* --- streaming fingerprint ------------------------------------------------------------------------------ */

#define FR__FP_MAGIC 0x46503031u  /* "FP01" */

void fr_fp_begin(fr_fp *fp, fr_u64 total_size)
{
    int w, k;
    if (fp == 0)
        return;
    fp->total = total_size;
    fp->seen = 0;
    /* The offsets `forensics crc` shows: HEAD at 0, MID at size/2 - 8, TAIL at size - 16 (never negative). */
    fp->at[0] = 0;
    fp->at[1] = (total_size >> 1) > 8 ? (total_size >> 1) - 8 : 0;
    fp->at[2] = total_size > 16 ? total_size - 16 : 0;
    fp->crc = 0xffffffffu;
    fp->fold[0] = 0;
    fp->fold[1] = 0;
    for (w = 0; w < 3; w++)
        for (k = 0; k < 4; k++)
            fp->peek[w][k] = 0;
    fp->magic = FR__FP_MAGIC;
}

int fr_fp_update(fr_fp *fp, const void *data, fr_size size)
{
    const unsigned char *p = (const unsigned char *)data;
    fr_u64 end;
    int w;
    if (fp == 0 || fp->magic != FR__FP_MAGIC || (p == 0 && size != 0))
        return FR_E_NULL;
    if ((fr_u64)size > fp->total - fp->seen)
        return FR_E_SIZE;
    end = fp->seen + size;
    /* HEAD, MID, TAIL: the bytes of this chunk inside each 16-byte window, shifted into its words. */
    for (w = 0; w < 3; w++) {
        fr_u64 from = fp->at[w] > fp->seen ? fp->at[w] : fp->seen, to = fp->at[w] + 16;
        if (to > end)
            to = end;
        for (; from < to; from++) {
            fr_u32 k = (fr_u32)(from - fp->at[w]);
            fp->peek[w][k >> 2] |= (fr_u32)p[(fr_size)(from - fp->seen)] << (8 * (k & 3));
        }
    }
    /* Bytes until the next multiple of 8 from the buffer's start one at a time, then whole blocks. */
    while (size > 0 && (fp->seen & 7) != 0) {
        fr_u32 k = (fr_u32)(fp->seen & 7);
        fp->fold[k >> 2] ^= (fr_u32)*p << (8 * (k & 3));
        fp->crc = fr__crc_table[0][(fp->crc ^ *p) & 0xff] ^ (fp->crc >> 8);
        p++;
        size--;
        fp->seen++;
    }
    /* One pass: each 64 KiB block goes through the CRC, then through the fold while it is still in the cache,
       so the buffer comes from memory once (the fold alone runs ten times faster than the CRC). */
    while (size > 0) {
        fr_size n = size < 65536 ? size : 65536;
        fp->crc = fr__crc_run(fp->crc, p, n);
        fr__fold(fp->fold, p, n);
        p += n;
        size -= n;
        fp->seen += n;
    }
    return FR_OK;
}

/* A bounded writer: keeps counting past the end so the caller learns the buffer was too small. */
typedef struct {
    char *buf;
    fr_size cap;
    fr_size len;
} fr__out;

static void fr__putc(fr__out *o, char c)
{
    if (o->len + 1 < o->cap)
        o->buf[o->len] = c;
    o->len++;
}

static void fr__puts(fr__out *o, const char *s)
{
    while (*s)
        fr__putc(o, *s++);
}

static const char fr__hexdigits[] = "0123456789abcdef";

static void fr__put_hex(fr__out *o, fr_u64 v, int width)  /* lowercase, at least width digits */
{
    int n = 1;
    while (n < 16 && (v >> (4 * n)) != 0)
        n++;
    if (n < width)
        n = width;
    while (n-- > 0)  /* straight to the output: no digit buffer a compiler could fill with memset */
        fr__putc(o, fr__hexdigits[(v >> (4 * n)) & 0xf]);
}

/* Decimal by long division in 16-bit digits: every step divides a 32-bit value by 10, which no target
   needs a helper for (a 64-bit `/` needs __udivdi3 on i686, _aulldiv with MSVC). */
static void fr__put_dec(fr__out *o, fr_u64 v)
{
    char tmp[20];
    int n = 0;
    fr_u32 limb[4];
    limb[0] = (fr_u32)(v >> 48) & 0xffffu;
    limb[1] = (fr_u32)(v >> 32) & 0xffffu;
    limb[2] = (fr_u32)(v >> 16) & 0xffffu;
    limb[3] = (fr_u32)v & 0xffffu;
    do {
        fr_u32 rem = 0, nonzero = 0;
        int i;
        for (i = 0; i < 4; i++) {
            fr_u32 cur = (rem << 16) | limb[i];
            limb[i] = cur / 10u;
            rem = cur % 10u;
            nonzero |= limb[i];
        }
        tmp[n++] = (char)('0' + rem);
        if (nonzero == 0)
            break;
    } while (n < 20);
    while (n > 0)
        fr__putc(o, tmp[--n]);
}

static void fr__put_peek(fr__out *o, const char *label, const fr_fp *fp, int w)
{
    fr_u64 left = fp->total - fp->at[w];
    fr_u32 i, n = left < 16 ? (fr_u32)left : 16;
    fr__puts(o, label);
    fr__put_hex(o, fp->at[w], 1);
    fr__putc(o, '=');
    for (i = 0; i < n; i++) {
        fr_u32 byte = (fp->peek[w][i >> 2] >> (8 * (i & 3))) & 0xff;
        if (i)
            fr__putc(o, ' ');
        fr__putc(o, fr__hexdigits[byte >> 4]);
        fr__putc(o, fr__hexdigits[byte & 0xf]);
    }
}

static int fr__check_tag(const char *tag)
{
    fr_size i;
    for (i = 0; tag[i] != '\0'; i++) {
        char c = tag[i];
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
                 c == '.' || c == ':' || c == '-';
        if (!ok || i >= FR_TAG_MAX)
            return FR_E_TAG;
    }
    return i == 0 ? FR_E_TAG : FR_OK;
}

int fr_fp_final(const fr_fp *fp, char *buf, fr_size bufsize, const char *tag)
{
    fr__out o;
    fr_u64 xor64;
    int rc;
    if (fp == 0 || fp->magic != FR__FP_MAGIC || buf == 0 || tag == 0)
        return FR_E_NULL;
    rc = fr__check_tag(tag);
    if (rc != FR_OK)
        return rc;
    if (fp->seen != fp->total)
        return FR_E_SIZE;
    o.buf = buf;
    o.cap = bufsize;
    o.len = 0;
    fr__puts(&o, "[FP] ");
    fr__puts(&o, tag);
    fr__puts(&o, " size=");
    fr__put_dec(&o, fp->total);
    fr__puts(&o, " crc32=0x");
    fr__put_hex(&o, ~fp->crc, 8);
    fr__puts(&o, " xor64=0x");
    xor64 = ((fr_u64)fp->fold[1] << 32) | fp->fold[0];
    fr__put_hex(&o, xor64, 16);
    fr__put_peek(&o, " head@0x", fp, 0);
    fr__put_peek(&o, " mid@0x", fp, 1);
    fr__put_peek(&o, " tail@0x", fp, 2);
    if (o.len + 1 > bufsize) {
        if (bufsize > 0)
            buf[0] = '\0';
        return FR_E_BUFFER;
    }
    buf[o.len] = '\0';
    return (int)o.len;
}

int fr_fingerprint_line(char *buf, fr_size bufsize, const char *tag, const void *data, fr_size size)
{
    fr_fp fp;
    int rc;
    if (buf == 0 || tag == 0 || (data == 0 && size != 0))
        return FR_E_NULL;
    fr_fp_begin(&fp, (fr_u64)size);
    rc = fr_fp_update(&fp, data, size);
    return rc != FR_OK ? rc : fr_fp_final(&fp, buf, bufsize, tag);
}

/* --- bitstream linking ---------------------------------------------------------------------------------- */

int fr_link_u32(fr_u8 *bitstream, fr_size size, fr_u64 offset_bit, fr_u32 value)
{
    fr_u64 byte = offset_bit >> 3;
    unsigned shift = (unsigned)(offset_bit & 7);
    fr_u8 *p;
    if (bitstream == 0)
        return FR_E_NULL;
    /* offset_bit + 32 <= 8 * size, without overflowing either side */
    if (size < 4 || byte > (fr_u64)(size - 4) || (byte == (fr_u64)(size - 4) && shift != 0))
        return FR_E_RANGE;
    p = bitstream + (fr_size)byte;
    if (shift == 0) {
        p[0] = (fr_u8)value;
        p[1] = (fr_u8)(value >> 8);
        p[2] = (fr_u8)(value >> 16);
        p[3] = (fr_u8)(value >> 24);
    } else {
        /* value's low 8 - shift bits fill the top of p[0]; its top shift bits the bottom of p[4]. */
        fr_u32 keep = (1u << shift) - 1u;
        p[0] = (fr_u8)((p[0] & keep) | ((value << shift) & 0xffu));
        p[1] = (fr_u8)(value >> (8 - shift));
        p[2] = (fr_u8)(value >> (16 - shift));
        p[3] = (fr_u8)(value >> (24 - shift));
        p[4] = (fr_u8)((p[4] & ~keep & 0xffu) | (value >> (32 - shift)));
    }
    return FR_OK;
}

/* --- user-mode part: runs on disk ---------------------------------------------------------------------- */
#ifndef FORENSICS_RUN_KERNEL_ONLY

#ifdef __cplusplus
} /* extern "C": system headers go outside it */
#endif

#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>

#ifdef _WIN32
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#define FR__UNDEF_LEAN
#endif
#include <windows.h>
#ifdef FR__UNDEF_LEAN
#undef WIN32_LEAN_AND_MEAN
#undef FR__UNDEF_LEAN
#endif
#define FR__SEP '\\'
#else
#include <sys/types.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>
#include <errno.h>
#define FR__SEP '/'
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The run reader's stage names, in its order (forensics/runs/run.py STAGES); a test compares the two. */
#define FR__NSTAGES 9
static const char *const fr__stages[FR__NSTAGES] = {"params", "instructions", "image", "input", "raw",
                                                    "relayouted", "tensor", "dequantized", "detections"};
static const char *const fr__roles[4] = {"boxes", "scores", "classes", "num_detections"};
static const char *const fr__dtypes[] = {FR_DTYPES};

typedef struct {
    int stage;          /* index into fr__stages */
    char *tensor;
    char *file;         /* relative to the run, '/' separated */
    uint64_t size;
    uint32_t crc32;
    char *dtype;
    int64_t *shape;     /* NULL: no shape */
    int rank;
    int has_quant;
    double scale;
    int zero_point;
    int record_size;
    int role;           /* index into fr__roles, -1 for none */
} fr__entry;

struct fr_run {
    char *target;       /* the directory the run appears at */
    char *tmp;          /* the hidden directory it is built in */
    char *source;
    char *tool;         /* NULL: JSON null */
    fr__entry *entries;
    int count, capacity;
    int stage_dir[FR__NSTAGES];   /* 1 once <tmp>/<stage> was created */
    int failed;         /* a write failed: commit refuses */
};

const char *fr_strerror(int code)
{
    switch (code) {
    case FR_OK: return "success";
    case FR_E_NULL: return "a required pointer argument is NULL";
    case FR_E_ARG: return "an empty or invalid argument (dir, source, tool: non-empty UTF-8 text)";
    case FR_E_STAGE: return "unknown stage (params, instructions, image, input, raw, relayouted, tensor, dequantized, "
                            "detections)";
    case FR_E_TENSOR: return "invalid tensor name (empty, not UTF-8, or with '/', '\\', '..' or control characters)";
    case FR_E_DUPLICATE: return "this (stage, tensor) is already in the run";
    case FR_E_EXISTS: return "the run directory already exists";
    case FR_E_META: return "invalid metadata (scale, shape, record_size or role)";
    case FR_E_NOMEM: return "out of memory";
    case FR_E_IO: return "the file system refused a write, mkdir or rename";
    case FR_E_FAILED: return "an earlier fr_run_add failed; the run cannot be committed";
    case FR_E_BUFFER: return "the output buffer is too small";
    case FR_E_TAG: return "invalid fingerprint tag (1-238 characters of [A-Za-z0-9_.:-])";
    case FR_E_DTYPE: return "unknown dtype (bool, int8, uint8, int16, uint16, int32, uint32, int64, uint64, "
                            "float16, float32, float64)";
    case FR_E_SIZE: return "fingerprint: more bytes than the announced size, or fewer at the end";
    case FR_E_RANGE: return "the bit offset is past the end of the bitstream";
    default: return "unknown error code";
    }
}

/* --- strings ---------------------------------------------------------------------------------------- */

static char *fr__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = (char *)malloc(n);
    if (d != NULL)
        memcpy(d, s, n);
    return d;
}

/* Strict UTF-8 (what Python's decoder accepts): no overlong forms, no surrogates, nothing above U+10FFFF. */
static int fr__valid_utf8(const char *text)
{
    const unsigned char *s = (const unsigned char *)text;
    while (*s) {
        unsigned char c = *s;
        int n, i;
        uint32_t cp;
        if (c < 0x80) {
            s++;
            continue;
        } else if (c >= 0xc2 && c <= 0xdf) {
            n = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 3;
            cp = c & 0x07;
        } else {
            return 0;
        }
        for (i = 1; i <= n; i++) {
            if ((s[i] & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i] & 0x3f);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        s += n + 1;
    }
    return 1;
}

static int fr__check_tensor(const char *t)
{
    const unsigned char *s = (const unsigned char *)t;
    if (*s == '\0' || !fr__valid_utf8(t) || strstr(t, "..") != NULL)
        return FR_E_TENSOR;
    for (; *s; s++)
        if (*s < 0x20 || *s == 0x7f || *s == '/' || *s == '\\')
            return FR_E_TENSOR;
    return FR_OK;
}

/* A growable text buffer for the manifest and paths; `oom` sticks once an allocation failed. */
typedef struct {
    char *p;
    size_t len, cap;
    int oom;
} fr__sb;

static void fr__sb_add(fr__sb *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        char *p;
        while (cap < b->len + n + 1)
            cap *= 2;
        p = (char *)realloc(b->p, cap);
        if (p == NULL) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void fr__sb_str(fr__sb *b, const char *s)
{
    fr__sb_add(b, s, strlen(s));
}

static void fr__sb_u64(fr__sb *b, uint64_t v)
{
    char tmp[24];
    fr__out o;
    o.buf = tmp;
    o.cap = sizeof tmp;
    o.len = 0;
    fr__put_dec(&o, v);
    fr__sb_add(b, tmp, o.len);
}

static void fr__sb_i64(fr__sb *b, int64_t v)
{
    if (v < 0) {
        fr__sb_add(b, "-", 1);
        fr__sb_u64(b, (uint64_t)0 - (uint64_t)v);
    } else {
        fr__sb_u64(b, (uint64_t)v);
    }
}

/* A JSON string: quotes, backslash and control characters escaped, UTF-8 passed through (validated before). */
static void fr__sb_json(fr__sb *b, const char *s)
{
    fr__sb_add(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char esc[2];
            esc[0] = '\\';
            esc[1] = (char)c;
            fr__sb_add(b, esc, 2);
        } else if (c < 0x20 || c == 0x7f) {
            char esc[6];
            esc[0] = '\\';
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = fr__hexdigits[c >> 4];
            esc[5] = fr__hexdigits[c & 0xf];
            fr__sb_add(b, esc, 6);
        } else {
            fr__sb_add(b, (const char *)&c, 1);
        }
    }
    fr__sb_add(b, "\"", 1);
}

static void fr__sb_json_or_null(fr__sb *b, const char *s)
{
    if (s == NULL)
        fr__sb_str(b, "null");
    else
        fr__sb_json(b, s);
}

/* The shortest of %.15g/%.16g/%.17g that reads back as the same double (17 digits always do), with '.'
   as the decimal point whatever the C locale says. Only called for finite values. */
static void fr__sb_double(fr__sb *b, double v)
{
    char tmp[48];
    int prec;
    char *c;
    for (prec = 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    for (c = tmp; *c; c++)
        if (*c == ',')
            *c = '.';
    fr__sb_str(b, tmp);
}

/* ISO 8601 UTC from time(): days since 1970-01-01 to a civil date (proleptic Gregorian, 400-year eras),
   computed here so no non-reentrant gmtime() is needed. */
static void fr__sb_now(fr__sb *b)
{
    time_t now = time(NULL);
    int64_t t = (int64_t)now, days, secs, era, doe, yoe, doy, mp, y, m, d;
    char tmp[24];
    fr__out o;
    if (now == (time_t)-1 || t < 0) {
        fr__sb_str(b, "null");
        return;
    }
    days = t / 86400;
    secs = t % 86400;
    days += 719468;  /* shift the epoch to 0000-03-01 so leap days fall at the end of a year */
    era = days / 146097;
    doe = days - era * 146097;
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    d = doy - (153 * mp + 2) / 5 + 1;
    m = mp < 10 ? mp + 3 : mp - 9;
    y = yoe + era * 400 + (m <= 2 ? 1 : 0);
    o.buf = tmp;
    o.cap = sizeof tmp;
    o.len = 0;
    fr__putc(&o, '"');
    fr__put_dec(&o, (uint64_t)y);
    fr__putc(&o, '-');
    fr__putc(&o, (char)('0' + m / 10));
    fr__putc(&o, (char)('0' + m % 10));
    fr__putc(&o, '-');
    fr__putc(&o, (char)('0' + d / 10));
    fr__putc(&o, (char)('0' + d % 10));
    fr__putc(&o, 'T');
    fr__putc(&o, (char)('0' + secs / 36000));
    fr__putc(&o, (char)('0' + secs / 3600 % 10));
    fr__putc(&o, ':');
    fr__putc(&o, (char)('0' + secs % 3600 / 600));
    fr__putc(&o, (char)('0' + secs % 600 / 60));
    fr__putc(&o, ':');
    fr__putc(&o, (char)('0' + secs % 60 / 10));
    fr__putc(&o, (char)('0' + secs % 10));
    fr__puts(&o, "Z\"");
    fr__sb_add(b, tmp, o.len);
}

/* --- the operating system: a few file operations, UTF-8 paths ------------------------------------------ */

#ifdef _WIN32
/* The reason a step failed, kept across the cleanup that follows it (which may set its own). */
typedef DWORD fr__err;
static fr__err fr__last_error(void)
{
    return GetLastError();
}

static void fr__set_error(fr__err err)
{
    SetLastError(err);
}

static wchar_t *fr__wide(const char *path)
{
    int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, NULL, 0);
    wchar_t *w;
    if (n <= 0)
        return NULL;
    w = (wchar_t *)malloc((size_t)n * sizeof(wchar_t));
    if (w != NULL && MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path, -1, w, n) != n) {
        free(w);
        w = NULL;
    }
    return w;
}

static int fr__exists(const char *path)
{
    wchar_t *w = fr__wide(path);
    int found;
    if (w == NULL)
        return 0;
    found = GetFileAttributesW(w) != INVALID_FILE_ATTRIBUTES;
    free(w);
    return found;
}

static int fr__mkdir(const char *path)  /* FR_OK, FR_E_EXISTS, FR_E_NOMEM or FR_E_IO */
{
    wchar_t *w = fr__wide(path);
    int rc = FR_OK;
    if (w == NULL)
        return FR_E_NOMEM;
    if (!CreateDirectoryW(w, NULL))
        rc = GetLastError() == ERROR_ALREADY_EXISTS ? FR_E_EXISTS : FR_E_IO;
    free(w);
    return rc;
}

static void fr__unlink(const char *path)
{
    wchar_t *w = fr__wide(path);
    if (w != NULL) {
        DeleteFileW(w);
        free(w);
    }
}

static void fr__rmdir(const char *path)
{
    wchar_t *w = fr__wide(path);
    if (w != NULL) {
        RemoveDirectoryW(w);
        free(w);
    }
}

/* Without MOVEFILE_REPLACE_EXISTING the move fails when the target exists: a run is never replaced. */
static int fr__rename_dir(const char *from, const char *to)
{
    wchar_t *wf = fr__wide(from), *wt = fr__wide(to);
    int rc = FR_E_NOMEM;
    if (wf != NULL && wt != NULL) {
        rc = FR_OK;
        if (!MoveFileExW(wf, wt, MOVEFILE_WRITE_THROUGH)) {
            DWORD err = GetLastError();
            rc = (err == ERROR_ALREADY_EXISTS || err == ERROR_FILE_EXISTS) ? FR_E_EXISTS : FR_E_IO;
        }
    }
    free(wf);
    free(wt);
    return rc;
}

/* Create (never overwrite), write everything, flush to the disk, close; on failure the file is removed. */
static int fr__write_file(const char *path, const void *data, size_t size)
{
    wchar_t *w = fr__wide(path);
    HANDLE h;
    const unsigned char *p = (const unsigned char *)data;
    int rc = FR_OK;
    fr__err err = 0;
    if (w == NULL)
        return FR_E_NOMEM;
    h = CreateFileW(w, GENERIC_WRITE, 0, NULL, CREATE_NEW, FILE_ATTRIBUTE_NORMAL, NULL);
    if (h == INVALID_HANDLE_VALUE) {
        free(w);
        return FR_E_IO;
    }
    while (size > 0) {
        DWORD chunk = size > 0x40000000u ? 0x40000000u : (DWORD)size, done = 0;
        if (!WriteFile(h, p, chunk, &done, NULL) || done == 0) {
            rc = FR_E_IO;
            err = GetLastError();
            break;
        }
        p += done;
        size -= done;
    }
#ifndef FORENSICS_RUN_NO_FSYNC
    if (rc == FR_OK && !FlushFileBuffers(h)) {
        rc = FR_E_IO;
        err = GetLastError();
    }
#endif
    if (!CloseHandle(h) && rc == FR_OK) {
        rc = FR_E_IO;
        err = GetLastError();
    }
    if (rc != FR_OK) {
        DeleteFileW(w);
        fr__set_error(err);
    }
    free(w);
    return rc;
}

static unsigned long fr__pid(void)
{
    return (unsigned long)GetCurrentProcessId();
}

#else /* POSIX */

typedef int fr__err;
static fr__err fr__last_error(void)
{
    return errno;
}

static void fr__set_error(fr__err err)
{
    errno = err;
}

static int fr__exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 || errno != ENOENT;  /* unreadable counts as there: never clobber it */
}

static int fr__mkdir(const char *path)
{
    if (mkdir(path, 0777) == 0)  /* the umask narrows it, as for any other directory the user makes */
        return FR_OK;
    return errno == EEXIST ? FR_E_EXISTS : FR_E_IO;
}

static void fr__unlink(const char *path)
{
    (void)unlink(path);
}

static void fr__rmdir(const char *path)
{
    (void)rmdir(path);
}

/* rename(2) would silently replace an empty directory at `to`: look first (the window is the caller's). */
static int fr__rename_dir(const char *from, const char *to)
{
    if (fr__exists(to))
        return FR_E_EXISTS;
    if (rename(from, to) != 0)
        return (errno == EEXIST || errno == ENOTEMPTY) ? FR_E_EXISTS : FR_E_IO;
    return FR_OK;
}

static int fr__write_file(const char *path, const void *data, size_t size)
{
    const unsigned char *p = (const unsigned char *)data;
    int rc = FR_OK;
    fr__err err = 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0666);
    if (fd < 0)
        return FR_E_IO;
    while (size > 0) {
        size_t chunk = size > 0x40000000u ? 0x40000000u : size;
        ssize_t done = write(fd, p, chunk);
        if (done < 0 && errno == EINTR)
            continue;
        if (done <= 0) {
            rc = FR_E_IO;
            err = done < 0 ? errno : ENOSPC;  /* write() returning 0 for a regular file: no room */
            break;
        }
        p += done;
        size -= (size_t)done;
    }
#ifndef FORENSICS_RUN_NO_FSYNC
    if (rc == FR_OK && fsync(fd) != 0) {
        rc = FR_E_IO;
        err = errno;
    }
#endif
    if (close(fd) != 0 && rc == FR_OK) {
        rc = FR_E_IO;
        err = errno;
    }
    if (rc != FR_OK) {
        (void)unlink(path);
        fr__set_error(err);
    }
    return rc;
}

static unsigned long fr__pid(void)
{
    return (unsigned long)getpid();
}

#endif

static char *fr__join(const char *dir, const char *a, const char *b)  /* dir/a[/b], native separator */
{
    fr__sb s;
    char sep[1];
    sep[0] = FR__SEP;
    memset(&s, 0, sizeof s);
    fr__sb_str(&s, dir);
    fr__sb_add(&s, sep, 1);
    fr__sb_str(&s, a);
    if (b != NULL) {
        fr__sb_add(&s, sep, 1);
        fr__sb_str(&s, b);
    }
    if (s.oom) {
        free(s.p);
        return NULL;
    }
    return s.p;
}

/* --- runs ----------------------------------------------------------------------------------------------- */

static int fr__is_sep(char c)
{
#ifdef _WIN32
    return c == '/' || c == '\\';
#else
    return c == '/';
#endif
}

static void fr__free_entry(fr__entry *e)
{
    free(e->tensor);
    free(e->file);
    free(e->dtype);
    free(e->shape);
}

static void fr__free_run(fr_run *r)
{
    int i;
    for (i = 0; i < r->count; i++)
        fr__free_entry(&r->entries[i]);
    free(r->entries);
    free(r->target);
    free(r->tmp);
    free(r->source);
    free(r->tool);
    free(r);
}

/* Remove everything this run wrote (its files, manifest, stage directories) and the temporary directory. */
static void fr__remove_tmp(fr_run *r)
{
    int i;
    char *path;
    for (i = 0; i < r->count; i++) {
        path = fr__join(r->tmp, fr__stages[r->entries[i].stage], r->entries[i].file);
        if (path != NULL)
            fr__unlink(path);
        free(path);
    }
    path = fr__join(r->tmp, "manifest.json", NULL);
    if (path != NULL)
        fr__unlink(path);
    free(path);
    for (i = 0; i < FR__NSTAGES; i++) {
        if (!r->stage_dir[i])
            continue;
        path = fr__join(r->tmp, fr__stages[i], NULL);
        if (path != NULL)
            fr__rmdir(path);
        free(path);
    }
    fr__rmdir(r->tmp);
}

/* Whether s (valid UTF-8) holds a character other than whitespace, by the reader's rule: Python's
   str.strip() removes the code points str.isspace() names (Unicode White_Space, U+001C-U+001F too). */
static int fr__has_text(const char *text)
{
    static const fr_u32 space[] = {0x85, 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000};
    const unsigned char *s = (const unsigned char *)text;
    while (*s) {
        fr_u32 cp = *s;
        int n = cp < 0x80 ? 0 : cp < 0xe0 ? 1 : cp < 0xf0 ? 2 : 3, i, blank;
        if (n > 0)
            cp &= 0x3fu >> n;
        for (i = 1; i <= n; i++)
            cp = (cp << 6) | (s[i] & 0x3fu);
        s += n + 1;
        blank = (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) || (cp >= 0x2000 && cp <= 0x200a);
        for (i = 0; i < (int)(sizeof space / sizeof space[0]); i++)
            blank |= cp == space[i];
        if (!blank)
            return 1;
    }
    return 0;
}

int fr_run_begin(fr_run **run, const char *dir, const char *source, const char *tool)
{
    fr_run *r;
    size_t n, base;
    int attempt, rc;
    if (run != NULL)
        *run = NULL;
    if (run == NULL || dir == NULL || source == NULL)
        return FR_E_NULL;
    if (!fr__valid_utf8(dir) || !fr__valid_utf8(source) || !fr__has_text(source) ||
        (tool != NULL && !fr__valid_utf8(tool)))
        return FR_E_ARG;
    n = strlen(dir);
    while (n > 1 && fr__is_sep(dir[n - 1]))  /* "runs/ours/" is "runs/ours" */
        n--;
    base = n;
    while (base > 0 && !fr__is_sep(dir[base - 1]))
        base--;
    if (n == base || (n - base == 1 && dir[base] == '.') || (n - base == 2 && dir[base] == '.' && dir[base + 1] == '.'))
        return FR_E_ARG;  /* empty, "/", ".", "..": no name to build a run under */
    r = (fr_run *)calloc(1, sizeof *r);
    if (r == NULL)
        return FR_E_NOMEM;
    r->target = (char *)malloc(n + 1);
    r->source = fr__strdup(source);
    r->tool = tool != NULL ? fr__strdup(tool) : NULL;
    if (r->target == NULL || r->source == NULL || (tool != NULL && r->tool == NULL)) {
        fr__free_run(r);
        return FR_E_NOMEM;
    }
    memcpy(r->target, dir, n);
    r->target[n] = '\0';
    if (fr__exists(r->target)) {
        fr__free_run(r);
        return FR_E_EXISTS;
    }
    /* <parent>/.<name>.<pid>-<run address>-<attempt>.tmp: hidden (forensics skips dot names), beside the
       target so the final rename stays on one file system, unique per process and live run. */
    for (attempt = 0; attempt < 100; attempt++) {
        fr__sb s;
        fr__out o;
        char num[64];
        memset(&s, 0, sizeof s);
        fr__sb_add(&s, r->target, base);
        fr__sb_add(&s, ".", 1);
        fr__sb_str(&s, r->target + base);
        o.buf = num;
        o.cap = sizeof num;
        o.len = 0;
        fr__putc(&o, '.');
        fr__put_dec(&o, (uint64_t)fr__pid());
        fr__putc(&o, '-');
        fr__put_hex(&o, (uint64_t)(uintptr_t)r, 1);
        fr__putc(&o, '-');
        fr__put_dec(&o, (uint64_t)attempt);
        fr__puts(&o, ".tmp");
        fr__sb_add(&s, num, o.len);
        if (s.oom) {
            free(s.p);
            fr__free_run(r);
            return FR_E_NOMEM;
        }
        rc = fr__mkdir(s.p);
        if (rc == FR_OK) {
            r->tmp = s.p;
            *run = r;
            return FR_OK;
        }
        free(s.p);
        if (rc != FR_E_EXISTS)
            break;
    }
    fr__free_run(r);
    return rc == FR_E_NOMEM ? FR_E_NOMEM : FR_E_IO;
}

static int fr__check_meta(const fr_meta *m, int *role)
{
    int i;
    *role = -1;
    if (m == NULL)
        return FR_OK;
    if (m->dtype != NULL) {
        int known = 0;
        for (i = 0; i < (int)(sizeof fr__dtypes / sizeof fr__dtypes[0]); i++)
            known |= strcmp(m->dtype, fr__dtypes[i]) == 0;
        if (!known)
            return FR_E_DTYPE;
    }
    if (m->rank < 0 || m->rank > 64 || (m->shape == NULL && m->rank != 0))
        return FR_E_META;
    for (i = 0; m->shape != NULL && i < m->rank; i++)
        if (m->shape[i] < 0)
            return FR_E_META;
    /* The manifest needs a positive finite scale; x - x is NaN for infinities and NaN. */
    if (m->has_quant && (!(m->scale > 0.0) || m->scale - m->scale != 0.0))
        return FR_E_META;
    if (m->record_size < 0)
        return FR_E_META;
    if (m->role != NULL) {
        for (i = 0; i < 4; i++)
            if (strcmp(m->role, fr__roles[i]) == 0)
                *role = i;
        if (*role < 0)
            return FR_E_META;
    }
    return FR_OK;
}

static int fr__reserved_on_windows(const char *name)  /* CON, PRN, AUX, NUL, COM1-9, LPT1-9 (any case) */
{
    static const char *const names[4] = {"con", "prn", "aux", "nul"};
    char low[5];
    size_t n = 0, i;
    while (name[n] != '\0' && name[n] != '.' && n < 5) {
        char c = name[n];
        low[n] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
        n++;
    }
    if (name[n] != '\0' && name[n] != '.')
        return 0;
    if (n == 3) {
        for (i = 0; i < 4; i++)
            if (memcmp(low, names[i], 3) == 0)
                return 1;
    }
    return n == 4 && (memcmp(low, "com", 3) == 0 || memcmp(low, "lpt", 3) == 0) && low[3] >= '1' && low[3] <= '9';
}

/* A file name for a tensor name, as forensics' own writer makes them (TFLite_Detection_PostProcess:1 ->
   TFLite_Detection_PostProcess_1.bin): runs of other characters become one '_', no leading/trailing '.' or
   '_', at most 120 characters; "-2", "-3" ... when two tensors of a stage map to the same name. */
static char *fr__file_name(const fr_run *r, int stage, const char *tensor)
{
    char safe[128];
    size_t n = 0, start = 0;
    const unsigned char *s;
    int k, i, clash, replacing = 0;
    for (s = (const unsigned char *)tensor; *s && n < sizeof safe - 1; s++) {
        int keep = (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
                   *s == '.' || *s == '_' || *s == '-';
        if (keep)
            safe[n++] = (char)*s;
        else if (!replacing)
            safe[n++] = '_';
        replacing = !keep;
    }
    while (n > 0 && (safe[n - 1] == '.' || safe[n - 1] == '_'))
        n--;
    while (start < n && (safe[start] == '.' || safe[start] == '_'))
        start++;
    if (n - start > 120)
        n = start + 120;
    for (k = 1; k < 1000000; k++) {
        fr__sb b;
        memset(&b, 0, sizeof b);
        if (n == start) {
            fr__sb_str(&b, "buffer");
        } else {
            char tmp[130];
            memcpy(tmp, safe + start, n - start);
            tmp[n - start] = '\0';
            if (fr__reserved_on_windows(tmp))
                fr__sb_add(&b, "_", 1);
            fr__sb_str(&b, tmp);
        }
        if (k > 1) {
            fr__sb_add(&b, "-", 1);
            fr__sb_u64(&b, (uint64_t)k);
        }
        fr__sb_str(&b, ".bin");
        if (b.oom) {
            free(b.p);
            return NULL;
        }
        clash = 0;
        for (i = 0; i < r->count && !clash; i++)
            clash = r->entries[i].stage == stage && strcmp(r->entries[i].file, b.p) == 0;
        if (!clash)
            return b.p;
        free(b.p);
    }
    return NULL;
}

int fr_run_add(fr_run *run, const char *stage, const char *tensor, const void *data, size_t size,
               const fr_meta *meta)
{
    fr__entry e;
    int st = -1, role, i, rc;
    char *path;
    if (run == NULL || stage == NULL || tensor == NULL || (data == NULL && size != 0))
        return FR_E_NULL;
    if (run->failed)
        return FR_E_FAILED;
    for (i = 0; i < FR__NSTAGES; i++)
        if (strcmp(stage, fr__stages[i]) == 0)
            st = i;
    if (st < 0)
        return FR_E_STAGE;
    rc = fr__check_tensor(tensor);
    if (rc != FR_OK)
        return rc;
    rc = fr__check_meta(meta, &role);
    if (rc != FR_OK)
        return rc;
    for (i = 0; i < run->count; i++)
        if (run->entries[i].stage == st && strcmp(run->entries[i].tensor, tensor) == 0)
            return FR_E_DUPLICATE;
    if (run->count == run->capacity) {
        int cap = run->capacity ? run->capacity * 2 : 8;
        fr__entry *grown = (fr__entry *)realloc(run->entries, (size_t)cap * sizeof *grown);
        if (grown == NULL)
            return FR_E_NOMEM;
        run->entries = grown;
        run->capacity = cap;
    }
    memset(&e, 0, sizeof e);
    e.stage = st;
    e.role = role;
    e.size = (uint64_t)size;
    e.tensor = fr__strdup(tensor);
    e.file = fr__file_name(run, st, tensor);
    rc = (e.tensor == NULL || e.file == NULL) ? FR_E_NOMEM : FR_OK;
    if (rc == FR_OK && meta != NULL) {
        e.has_quant = meta->has_quant != 0;
        e.scale = meta->scale;
        e.zero_point = meta->zero_point;
        e.record_size = meta->record_size;
        e.rank = meta->rank;
        if (meta->dtype != NULL && (e.dtype = fr__strdup(meta->dtype)) == NULL)
            rc = FR_E_NOMEM;
        if (meta->shape != NULL) {
            e.shape = (int64_t *)malloc((size_t)(meta->rank > 0 ? meta->rank : 1) * sizeof(int64_t));
            if (e.shape == NULL)
                rc = FR_E_NOMEM;
            else if (meta->rank > 0)
                memcpy(e.shape, meta->shape, (size_t)meta->rank * sizeof(int64_t));
        }
    }
    if (rc != FR_OK) {
        fr__free_entry(&e);
        return rc;
    }
    if (!run->stage_dir[st]) {
        path = fr__join(run->tmp, fr__stages[st], NULL);
        rc = path == NULL ? FR_E_NOMEM : fr__mkdir(path);
        free(path);
        if (rc == FR_E_EXISTS)
            rc = FR_OK;
        if (rc != FR_OK) {
            fr__free_entry(&e);
            if (rc == FR_E_IO)
                run->failed = 1;
            return rc;
        }
        run->stage_dir[st] = 1;
    }
    path = fr__join(run->tmp, fr__stages[st], e.file);
    rc = path == NULL ? FR_E_NOMEM : fr__write_file(path, data, size);
    free(path);
    if (rc != FR_OK) {
        fr__free_entry(&e);
        if (rc == FR_E_IO)
            run->failed = 1;  /* a half-written run is never committed by mistake */
        return rc;
    }
    e.crc32 = fr_crc32(0, data, size);
    run->entries[run->count++] = e;
    return FR_OK;
}

static void fr__manifest(const fr_run *r, fr__sb *b)
{
    int st, i, d, first = 1;
    fr__sb_str(b, "{\n  \"format\": \"forensics-run\",\n  \"version\": 1,\n  \"source\": ");
    fr__sb_json(b, r->source);
    fr__sb_str(b, ",\n  \"created\": ");
    fr__sb_now(b);
    fr__sb_str(b, ",\n  \"tool\": ");
    fr__sb_json_or_null(b, r->tool);
    fr__sb_str(b, ",\n  \"model\": null,\n  \"input_image\": null,\n  \"buffers\": [");
    for (st = 0; st < FR__NSTAGES; st++) {  /* in stage order, as forensics writes them; added order within a stage */
        for (i = 0; i < r->count; i++) {
            const fr__entry *e = &r->entries[i];
            char crc[11];
            fr__out o;
            if (e->stage != st)
                continue;
            fr__sb_str(b, first ? "\n    {\"stage\": " : ",\n    {\"stage\": ");
            first = 0;
            fr__sb_json(b, fr__stages[st]);
            fr__sb_str(b, ", \"tensor\": ");
            fr__sb_json(b, e->tensor);
            fr__sb_str(b, ", \"file\": \"");
            fr__sb_str(b, fr__stages[st]);
            fr__sb_str(b, "/");
            fr__sb_str(b, e->file);  /* [A-Za-z0-9._-] only: nothing to escape */
            fr__sb_str(b, "\", \"size\": ");
            fr__sb_u64(b, e->size);
            o.buf = crc;
            o.cap = sizeof crc;
            o.len = 0;
            fr__puts(&o, "0x");
            fr__put_hex(&o, e->crc32, 8);
            fr__sb_str(b, ", \"crc32\": \"");
            fr__sb_add(b, crc, o.len);
            fr__sb_str(b, "\"");
            if (e->dtype != NULL) {
                fr__sb_str(b, ", \"dtype\": ");
                fr__sb_json(b, e->dtype);
            }
            if (e->shape != NULL) {
                fr__sb_str(b, ", \"shape\": [");
                for (d = 0; d < e->rank; d++) {
                    if (d)
                        fr__sb_str(b, ", ");
                    fr__sb_i64(b, e->shape[d]);
                }
                fr__sb_str(b, "]");
            }
            if (e->has_quant) {
                fr__sb_str(b, ", \"scale\": ");
                fr__sb_double(b, e->scale);
                fr__sb_str(b, ", \"zero_point\": ");
                fr__sb_i64(b, e->zero_point);
            }
            if (e->record_size > 0) {
                fr__sb_str(b, ", \"record_size\": ");
                fr__sb_i64(b, e->record_size);
            }
            if (e->role >= 0) {
                fr__sb_str(b, ", \"role\": ");
                fr__sb_json(b, fr__roles[e->role]);
            }
            fr__sb_str(b, "}");
        }
    }
    fr__sb_str(b, first ? "]\n}\n" : "\n  ]\n}\n");
}

int fr_run_commit(fr_run *run)
{
    fr__sb b;
    char *path;
    int rc;
    if (run == NULL)
        return FR_E_NULL;
    if (run->failed) {
        fr_run_abort(run);
        return FR_E_FAILED;
    }
    memset(&b, 0, sizeof b);
    fr__manifest(run, &b);
    path = fr__join(run->tmp, "manifest.json", NULL);
    if (b.oom || path == NULL)
        rc = FR_E_NOMEM;
    else
        rc = fr__write_file(path, b.p, b.len);  /* last: only a finished run has a manifest */
    free(path);
    free(b.p);
    if (rc == FR_OK)
        rc = fr__rename_dir(run->tmp, run->target);
    if (rc != FR_OK) {
        fr__err err = fr__last_error();  /* the cleanup's unlink and rmdir calls would overwrite it */
        fr_run_abort(run);
        fr__set_error(err);
        return rc;
    }
    fr__free_run(run);
    return FR_OK;
}

void fr_run_abort(fr_run *run)
{
    if (run == NULL)
        return;
    fr__remove_tmp(run);
    fr__free_run(run);
}

#endif /* FORENSICS_RUN_KERNEL_ONLY */

#ifdef __cplusplus
}
#endif
#endif /* FORENSICS_RUN_IMPLEMENTATION */
