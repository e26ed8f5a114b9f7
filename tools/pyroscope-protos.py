#!/usr/bin/env python3
# Copies the .proto files of Pyroscope's query API that cprof serve answers (proto/pyroscope/README)
# from a checkout of github.com/grafana/pyroscope into proto/pyroscope/, without their OpenAPI
# annotations: those import gnostic's annotations.proto, which Pyroscope takes from buf's registry
# (not from its tree) and which only documents the API.  Nothing else is changed.
# usage: tools/pyroscope-protos.py PYROSCOPE_CHECKOUT [DEST (default proto/pyroscope)]
import re, sys, os
FILES = ["querier/v1/querier.proto", "types/v1/types.proto", "google/v1/profile.proto", "settings/v1/setting.proto"]
src, dst = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "proto/pyroscope"
for f in FILES:
    t = open(os.path.join(src, "api", f)).read()
    t = re.sub(r'^import "gnostic/[^"]*";\n', "", t, flags=re.M)
    t = re.sub(r"\s*\[\(gnostic\.[^\n]*?\}\]", "", t)  # field options: [(gnostic...).example = {yaml: "..."}]
    t = re.sub(r'\{\s*option \(gnostic\.[^;]*;\s*\}', "{}", t)  # method options
    if "gnostic" in t:
        sys.exit("pyroscope-protos: gnostic left in " + f)
    os.makedirs(os.path.dirname(os.path.join(dst, f)), exist_ok=True)
    open(os.path.join(dst, f), "w").write(t)
