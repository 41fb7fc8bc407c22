"""The instruction stream: bitstreams linked as libedgetpu links them, a driver's link audited, link bugs."""
