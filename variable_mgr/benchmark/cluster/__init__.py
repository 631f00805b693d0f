"""The benchmark across a ps/worker cluster on TensorFlow's gRPC runtime."""
