# Builds the `realpast` bench corpus: successive released versions of real npm packages committed
# with Mercurial's own machinery in one process (scripts/bench/realpast-corpus.mjs drives it).
#
#   python3 realpast-build.py DEST PLAN.json
#
# PLAN.json: {"compression": "zstd"|"zlib", "split": K, "versions": [{"pkg", "version", "time",
# "tarball"}...]} in publish order. Each version replaces the package's folder; addremove with
# --similarity 50 records renames; the changes are committed in changesets of at most K files
# (additions and edits first, removals last, so a rename's source is still there when its copy
# is recorded), dated at the version's publish time: real diffs, many changesets.
import json, os, shutil, sys, tarfile, calendar, time

from mercurial import commands, hg, ui as uimod

dest, plan_path = sys.argv[1], sys.argv[2]
plan = json.load(open(plan_path))
u = uimod.ui.load()
u.setconfig(b'ui', b'quiet', b'true')
u.setconfig(b'format', b'revlog-compression', plan['compression'].encode())
hg.repository(u, dest.encode(), create=True)
repo = hg.repository(u, dest.encode())
split = int(plan.get('split', 4))


def members(path):
    """(relative path, bytes) of each regular file of an npm tarball, without its first folder."""
    with tarfile.open(path) as tf:
        for m in tf:
            if not m.isfile():
                continue
            rel = m.name.split('/', 1)[1] if '/' in m.name else m.name
            parts = [p for p in rel.split('/') if p not in ('', '.', '..')]
            if not parts or parts[0] == '.hg':
                continue
            yield '/'.join(parts), tf.extractfile(m).read()


def replace_package(pkg, tarball):
    root = os.path.join(dest, pkg)
    new = dict(members(tarball))
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            full = os.path.join(dirpath, f)
            if os.path.relpath(full, root) not in new:
                os.unlink(full)
    for rel, data in new.items():
        full = os.path.join(root, rel)
        try:
            with open(full, 'rb') as fh:
                if fh.read() == data:
                    continue
        except OSError:
            pass
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, 'wb') as fh:
            fh.write(data)


count = 0
for i, v in enumerate(plan['versions']):
    replace_package(v['pkg'], v['tarball'])
    commands.addremove(u, repo, similarity=b'50')
    st = repo.status()
    changed = sorted(st.modified + st.added) + sorted(st.removed)
    if not changed:
        continue
    stamp = calendar.timegm(time.strptime(v['time'][:19], '%Y-%m-%dT%H:%M:%S'))
    groups = [changed[k : k + split] for k in range(0, len(changed), split)]
    for g, files in enumerate(groups):
        msg = '%s %s (%d/%d)' % (v['pkg'], v['version'], g + 1, len(groups))
        commands.commit(
            u,
            repo,
            *[b'path:' + f for f in files],
            message=msg.encode(),
            user=('%s maintainers <%s@npmjs.invalid>' % (v['pkg'], v['pkg'])).encode(),
            date=b'%d 0' % (stamp + g),
        )
        count += 1
    if i % 20 == 0:
        print('realpast: %d/%d versions, %d changesets' % (i + 1, len(plan['versions']), count), flush=True)
print('realpast: %d changesets' % count)
