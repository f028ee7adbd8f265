"""Import the installed torchvision and run its C++ nms op, on CUDA too where torch has it.

Run from a folder outside any source tree: from inside one, `import torchvision` picks up
the unbuilt source package (`operator torchvision::nms does not exist`). Prints JSON.
"""

import json

import torch
import torchvision

devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
for device in devices:
    boxes = torch.tensor([[0.0, 0.0, 10.0, 10.0], [1.0, 1.0, 11.0, 11.0]], device=device)
    scores = torch.tensor([0.9, 0.8], device=device)
    keep = torchvision.ops.nms(boxes, scores, 0.5).tolist()
    if keep != [0]:
        raise SystemExit("torchvision.ops.nms on %s kept %s, expected [0]" % (device, keep))
print(
    json.dumps({"version": torchvision.__version__, "file": torchvision.__file__, "nms": devices})
)
