# Reads a Kiln event file with the tensorboard package's own loader and prints what it
# finds, one line per summary value (tests/viewers.rs compares the lines).
import sys

from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader

for ev in LegacyEventFileLoader(sys.argv[1]).Load():
    if ev.HasField("file_version"):
        print("version", ev.file_version)
        continue
    for v in ev.summary.value:
        kind = v.WhichOneof("value")
        if kind == "simple_value":
            print("scalar", ev.step, v.tag, round(v.simple_value, 6))
        elif kind == "histo":
            print("histo", ev.step, v.tag, list(v.histo.bucket), list(v.histo.bucket_limit), v.histo.num)
        elif kind == "image":
            print("image", ev.step, v.tag, v.image.height, v.image.width, v.image.colorspace)
        elif kind == "tensor":
            print("text", ev.step, v.tag, v.metadata.plugin_data.plugin_name, [s.decode() for s in v.tensor.string_val])
