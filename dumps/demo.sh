#!/usr/bin/env bash
# The story on the bundled dumps: are the inputs the same, are the outputs the same, where is the face?
# Usage: bash dumps/demo.sh [COMMAND...]   (default: `forensics` on PATH). Exits non-zero if a step fails.
set -u
if [ $# -gt 0 ]; then F=("$@"); else F=(forensics); fi
cd "$(dirname "$0")/.."
status=0
step() {  # step EXPECTED_EXIT COMMAND...
    local expected=$1; shift
    printf '\n\033[1m$ forensics %s\033[0m\n' "$*"
    "${F[@]}" "$@"
    local code=$?
    if [ "$code" -ne "$expected" ]; then
        echo "demo: expected exit $expected from 'forensics $*', got $code" >&2
        status=1
    fi
}
echo "1. Are the inputs even the same?"
step 0 crc dumps/libedgetpu/input.bin dumps/ours/input.bin
echo; echo "2. Did the chip write the same scores through both drivers?"
step 0 diff dumps/libedgetpu/convert_scores.bin dumps/ours/convert_scores.bin
echo; echo "3. The first 256 bytes repeat one record. Which anchors do not?"
step 0 anchors dumps/ours/convert_scores.bin --nonuniform --deps dumps/face_ssd
if "${F[@]}" decode --help >/dev/null 2>&1 && [ -d dumps/face_ssd ]; then
    echo; echo "4. Decode them as TFLite_Detection_PostProcess would (anchors + options in dumps/face_ssd)"
    step 0 decode --deps dumps/face_ssd dumps/ours/Squeeze1.bin dumps/ours/convert_scores.bin --image-size 640x480
fi
echo; echo "5. What a real bug looks like: a DMA that stopped early (0xCC prefill left) and a row-stride bug"
step 1 diff dumps/libedgetpu/convert_scores.bin dumps/broken/convert_scores.bin --limit 3
step 1 coverage dumps/broken/convert_scores.bin --sentinel cc
step 1 crc dumps/libedgetpu/input.bin dumps/broken/input.bin --chunk 960
step 1 diagnose dumps/libedgetpu/convert_scores.bin dumps/broken/convert_scores.bin
exit $status
