"""Model forensics: reading .tflite graphs, flexbuffer options, the Edge TPU DWN1 package, relayout."""
