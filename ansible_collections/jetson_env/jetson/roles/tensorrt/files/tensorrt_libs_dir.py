# Where pip's tensorrt-cuXX put libnvinfer: the folder of tensorrt_libs. The tensorrt role
# lists it for the loader; the doctor's remedy runs the same lines (checks/libnvinfer.py).
import os

import tensorrt_libs

print(os.path.dirname(tensorrt_libs.__file__))
