"""Names vulture (tests/house/test_dead_code.py) takes for dead code in forensics/ that are alive, each with the reason.

Vulture reads this file as code that uses the names below; nothing imports it. A name goes here only with the
reason it is used where vulture cannot see it; dead code is removed instead.
"""
# ruff: noqa

# Python calls these hooks itself: a module's lazy attributes and its dir().
__dir__  # forensics/reports/__init__.py

# rich reads these attributes of the Column and Table objects they are set on.
no_wrap  # forensics/render/csr.py
min_width  # forensics/render/csr.py
caption  # forensics/render/runs.py
# numpy reads this flag of the array it is set on (a read-only view of the model's bytes).
writeable  # forensics/model/tflite/flat.py
# the flatbuffers Builder reads it (alignment of the appended original model).
minalign  # forensics/model/tflite/tail.py
# Dask calls a SchedulerPlugin's transition() on every task state change (forensics/runs/engine.py).
transition

# Fields of frozen result types: part of their to_dict() documents and of the library's API, read by users.
cache_on_dram  # forensics/model/tflite/edgetpu.py: the executable's flag as the package stores it
decoded_boxes  # forensics/decode/ssd.py
poll_key  # forensics/csr/parse.py
is_read  # forensics/csr/parse.py
_vt  # forensics/model/tflite/flat.py: the table's vtable offset, kept beside its length for debugging

# Registered when their module is imported (forensics/diagnose/kinds/__init__.py collects every Kind).
SATURATION  # forensics/diagnose/kinds/value_map.py
REQUANTIZE  # forensics/diagnose/kinds/value_map.py

# schema.fbs's names for the model writer's users (tests build models with them; any int is accepted).
ADD, CONCATENATION, LOGISTIC, QUANTIZE, DEQUANTIZE_OPTIONS  # forensics/model/tflite/writer.py
concatenation_options  # forensics/model/tflite/writer.py: the writer's public spelling of CONCATENATION's options

# A panel drawer chosen by name from PANEL_NAMES (forensics/render/errorplot.py).
scatter

# The pattern every judging result's renderer prints (CONTRIBUTING: one judgement per result); results move to
# it one by one this round.

# Left to the owners of these files this round (listed in the helper's report), to be removed there:
colon  # forensics/link/bitstream.py: `kind, colon, name = left.partition(":")` (spelled `_` elsewhere)

# Derived properties a result's document carries: its JSON_DERIVED / JSON_DERIVED_OPTIONAL names them and
# forensics.core.serial.encode reads them by name.
untouched_ranges_truncated  # forensics/buffer/coverage.py
expect_match  # forensics/compare/crc.py
pcie_window  # forensics/csr/registers.py
label_offset  # forensics/decode/ssd.py
first_mismatches  # forensics/decode/ssd_anchors.py: a field of the AnchorCheck document
crc32_text  # forensics/runs/repeat.py: BufferModal's crc32
outlier_count  # forensics/runs/repeat.py: RepeatResult's outliers
rank_change  # forensics/model/classes.py: RankedClass's document
box_tolerance  # forensics/decode/replay.py: ReplayResult's document
pair_count  # forensics/runs/batch.py: BatchResult's pairs
dominant_values  # forensics/buffer/anchors.py: AnchorsResult's document
xor_hex  # forensics/compare/diff.py: DifferingRecord's xor
stats_detail  # forensics/compare/diff.py: DiffResult's document
past_end_rows  # forensics/buffer/fingerprint.py: VerifyReport's past_end
image_count  # forensics/runs/capture_many.py: CaptureManyResult's images
