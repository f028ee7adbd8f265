"""jetson-env: from a freshly flashed Jetson or x86 GPU host to working PyTorch -> TensorRT."""
