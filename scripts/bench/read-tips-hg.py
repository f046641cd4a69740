# hg's side of history-bench.mjs's "tip of every filelog": the same loop in hg's own Python
# (revlog.rawdata of the last revision, node id checked), timed inside the process.
import json, os, sys, time
from mercurial import hg, ui as uimod

repo = hg.repository(uimod.ui.load(), sys.argv[1].encode())
names = []
for entry in repo.store.datafiles():
    # hg 6.3: (file type, unencoded name, encoded name, size)
    name = next(x for x in entry if isinstance(x, bytes))
    if name.startswith(b'data/') and name.endswith(b'.i'):
        names.append(name[5:-2])
t = time.perf_counter()
c = time.process_time()
total = 0
for f in names:
    fl = repo.file(f)
    if len(fl):
        total += len(fl.rawdata(fl.node(len(fl) - 1)))
print(json.dumps({"files": len(names), "bytes": total, "ms": (time.perf_counter() - t) * 1000, "cpuMs": (time.process_time() - c) * 1000}))
