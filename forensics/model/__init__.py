"""What a model says: the TFLite flatbuffer and the Edge TPU DWN1 package (tflite/), the TFLite runtime,
a classifier's class scores."""
