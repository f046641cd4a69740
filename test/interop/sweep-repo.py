# A varied hg repository from a seed, made by real hg (its commands run in process through
# mercurial.dispatch: one Python start for a whole history). Deterministic: the same seed gives the
# same nodes (fixed dates, user and random choices). Used by sweep.test.ts.
#
#   /usr/bin/python3 sweep-repo.py SEED DEST [--big]
#   /usr/bin/python3 sweep-repo.py SEED COPY --markers
#
# Prints one JSON line: the format options the repository was made with and the revisions worth
# updating to (an old one, a closed branch head, a tag, a bookmark). --markers adds obsolescence
# markers to COPY, a copy of a generated repository, and turns evolution on in its hgrc: a draft
# head amended (a successor), draft changesets pruned (a head, sometimes one with descendants:
# orphans), a marker whose predecessor is unknown here, sometimes one on a public changeset.
import json
import os
import random
import shutil
import sys

from mercurial import dispatch

seed = int(sys.argv[1])
dest = os.path.abspath(sys.argv[2]).encode()
big = '--big' in sys.argv
markers = '--markers' in sys.argv
rng = random.Random(seed)

FORMATS = [
    ['format.revlog-compression=zstd'],
    ['format.sparse-revlog=no'],
    ['format.generaldelta=no', 'format.usegeneraldelta=no', 'format.sparse-revlog=no'],
    ['format.use-persistent-nodemap=yes'],
    ['format.use-dirstate-v2=yes'],
    ['format.dotencode=no'],
    ['format.maxchainlen=3'],
    ['format.revlog-compression=zlib'],
]
# hg 6.3.2 without its Rust extensions opens dirstate-v2 and persistent-nodemap repositories
# only with their slow paths allowed (sweep.test.ts passes the same to every hg it runs)
config = ['storage.dirstate-v2.slow-path=allow', 'storage.revlog.persistent-nodemap.slow-path=allow']
for f in rng.sample(FORMATS, rng.randint(0, 3)):
    config += f

# names hg stores encoded: uppercase, '~', trailing dots and spaces, Windows-reserved names,
# directories ending .i/.d/.hg, non-ASCII (UTF-8 and bytes that are not), long paths past the fncache's hashed encoding (120)
LONG = 'long/' + '/'.join(['Segment_%02d_%s' % (i, 'x' * 20) for i in range(8)]) + '/Leaf~File.TXT'
NAMES = [
    'a.txt', 'dir/b.txt', 'dir/sub/c.txt', 'UPPER/Case.TXT', 'tilde~1.txt', 'trail.', 'trail ',
    'aux.txt', 'con', 'dir/prn.c', 'nul/x', 'lpt1.dat', 'store.d/x', 'sub.i/y', 'z.hg/w',
    'caf\u00e9.txt', 'k\u00f6nig/\u00e4.txt', LONG, LONG.replace('Leaf', 'Other'), 'empty', 'x/.hidden',
    'data/foo.i', 'meta.d', b'latin1-caf\xe9.txt', b'raw\xff/f',
]
# a few names are both a file and a directory at different times
SWAP = ['swap', 'swap2']

date = [0]


def hg(*args, ok=(0,)):
    date[0] += 1
    cmd = [a.encode() if isinstance(a, str) else a for a in args]
    if cmd[0] in (b'commit', b'tag', b'ci'):
        # -u: HGUSER would win over ui.username
        cmd += [b'-u', b'test', b'-d', b'%d 0' % (1_000_000 + date[0] * 60)]
    full = ([] if cmd[0] == b'init' else [b'-R', dest]) + [b'-y', b'--config', b'ui.username=test', b'--config', b'ui.merge=internal:other'] + cmd
    for c in config:
        full += [b'--config', c.encode()]
    req = dispatch.request(full)
    code = dispatch.dispatch(req) or 0
    if code < 0:
        code = 255
    if code not in ok:
        raise SystemExit('hg %r -> %d' % (args, code))
    return code


def p(name):
    return os.path.join(dest, name.encode('utf-8') if isinstance(name, str) else name)


def rmpath(path):
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)


def write(name, data):
    path = p(name)
    parent = os.path.dirname(path)
    # a file standing where a parent directory must be: remove it (hg sees it removed)
    cur = parent
    while cur != dest:
        if os.path.islink(cur) or os.path.isfile(cur):
            rmpath(cur)
            break
        cur = os.path.dirname(cur)
    os.makedirs(parent, exist_ok=True)
    if os.path.isdir(path) and not os.path.islink(path) or os.path.islink(path):
        rmpath(path)
    with open(path, 'wb') as fh:
        fh.write(data)


def text(n):
    words = ['alpha', 'beta', 'gamma', 'delta']
    return ('v%d\n' % date[0]).encode() + ''.join('line %d %s\n' % (i, rng.choice(words)) for i in range(n)).encode()


def tracked():
    files = []
    for root, dirs, names in os.walk(dest):
        if root == dest:
            dirs[:] = [d for d in dirs if d != b'.hg']
        for n in names + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            files.append(os.path.relpath(os.path.join(root, n), dest))
    return sorted(files)


def commit(msg, **kw):
    hg('commit', '-q', '-A', '-m', msg, ok=(0, 1), **kw)


def add_markers():
    from mercurial import hg as hglib, ui as uimod

    def nodes(revset):
        u = uimod.ui.load()
        for c in config:
            section, rest = c.split('.', 1)
            name, value = rest.split('=', 1)
            u.setconfig(section.encode(), name.encode(), value.encode())
        repo = hglib.repository(u, dest)
        return [repo[r].hex() for r in repo.revs(revset.encode())]

    mrng = random.Random(seed * 7919 + 1)
    with open(os.path.join(dest, b'.hg', b'hgrc'), 'ab') as fh:
        fh.write(b'[experimental]\nevolution = all\n')
    made = []
    heads = nodes('heads(draft()) and not merge() and not secret()')
    if heads:
        hg('update', '-q', '-C', mrng.choice(heads))
        write('amended-%d.txt' % seed, text(2))
        hg('commit', '-q', '-A', '--amend', '-m', 'amended', ok=(0, 1))
        made.append('amend')
    heads = nodes('heads(draft()) and not merge() and not secret() and not .')
    if heads:
        hg('debugobsolete', '-d', '%d 0' % (2_000_000 + seed), '-u', 'test', mrng.choice(heads))
        made.append('prune head')
    mids = nodes('draft() and not head() and not merge()')
    if mids and mrng.random() < 0.5:
        hg('debugobsolete', '-d', '%d 0' % (2_000_001 + seed), '-u', 'test', mrng.choice(mids))
        made.append('prune with descendants')
    visible = nodes('draft() and not secret()')
    if visible:
        unknown = '%040x' % mrng.getrandbits(160)
        hg('debugobsolete', '-d', '%d 0' % (2_000_002 + seed), '-u', 'test', unknown, mrng.choice(visible))
        made.append('unknown predecessor')
    if mrng.random() < 0.3:
        hg('debugobsolete', '-d', '%d 0' % (2_000_003 + seed), '-u', 'test', nodes('public()')[-1])
        made.append('public pruned')
    hg('update', '-q', '-C', 'default')
    print(json.dumps({'config': config, 'markers': made}))


if markers:
    # the amend's marker takes its date from devel.default-date, else the clock
    config += ['experimental.evolution=all', 'devel.default-date=2000000 0']
    add_markers()
    sys.exit(0)

os.makedirs(dest)
hg('init', dest)

with open(os.path.join(dest, b'.hg', b'hgrc'), 'wb') as fh:
    fh.write(b'[phases]\npublish = False\n')
write('a.txt', text(20))
write('empty', b'')
commit('root')

big_blob = None
if big:
    big_blob = bytearray(rng.randbytes(rng.randint(1, 3) << 20))

branches = ['default']
tags = []
n_commits = rng.randint(25, 45)
for i in range(n_commits):
    op = rng.random()
    if big_blob is not None and rng.random() < 0.25:
        # a few 64-byte edits of the big incompressible file: small deltas against a big base
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(big_blob) - 64)
            big_blob[at:at + 64] = rng.randbytes(64)
        write('big.bin', bytes(big_blob))
    files = tracked()
    if op < 0.30:
        for _ in range(rng.randint(1, 3)):
            name = rng.choice(NAMES)
            write(name, b'' if name == 'empty' else text(rng.randint(1, 40)))
    elif op < 0.38 and files:
        victim = rng.choice(files)
        rmpath(os.path.join(dest, victim))
    elif op < 0.45 and files:
        src = rng.choice(files)
        dst = rng.choice(NAMES + ['moved-%d.txt' % i, 'dir/moved-%d' % i])
        dst = dst.encode('utf-8') if isinstance(dst, str) else dst
        if src != dst and not os.path.lexists(p(dst)) and not os.path.islink(os.path.join(dest, src)):
            hg(rng.choice(['copy', 'rename']), os.path.join(dest, src), p(dst), ok=(0, 1, 255))
    elif op < 0.50 and files:
        f = os.path.join(dest, rng.choice(files))
        if not os.path.islink(f):
            os.chmod(f, os.stat(f).st_mode ^ 0o111)
    elif op < 0.55:
        name = rng.choice(['link', 'dir/link', 'swap'])
        if os.path.islink(p(name)):
            write(name, text(3))  # symlink replaced by a file
        else:
            rmpath(p(name))
            os.makedirs(os.path.dirname(p(name)), exist_ok=True)
            os.symlink(rng.choice([b'a.txt', b'../a.txt', b'missing', b'dir']), p(name))
    elif op < 0.60:
        s = rng.choice(SWAP)
        if os.path.isdir(p(s)) and not os.path.islink(p(s)):
            write(s, text(2))  # directory replaced by a file
        else:
            rmpath(p(s))
            write(s + '/inner', text(2))  # file replaced by a directory
    elif op < 0.65:
        b = rng.choice(['stable', 'feature', 'old', 'default'])
        hg('branch', '-q', '-f', b)
        if b not in branches:
            branches.append(b)
        write('branch-' + b, text(2))
    elif op < 0.69 and len(branches) > 1:
        b = rng.choice(branches[1:])
        hg('update', '-q', '-C', b, ok=(0, 1))
        write('closing-' + b, text(1))
        commit('close ' + b, )
        hg('commit', '-q', '--close-branch', '-m', 'closed ' + b, ok=(0, 1, 255))
        hg('update', '-q', '-C', 'default', ok=(0, 1))
        continue
    elif op < 0.75:
        # a second head on default: commit on top of an older default revision
        hg('update', '-q', '-C', 'max(branch(default) and not head())', ok=(0, 1, 255))
        write('head-%d.txt' % i, text(3))
    elif op < 0.78:
        # merge another head of this branch, or another branch
        code = hg('merge', '-q', '-r', 'max(head() and not . and not closed())', ok=(0, 1, 255))
        if code != 0:
            hg('update', '-q', '-C', '.')
            continue
    elif op < 0.82:
        # two sides from one parent, a rename on one and a copy plus an edit on the other, merged
        plain = [f for f in files if os.path.isfile(os.path.join(dest, f))
                 and not os.path.islink(os.path.join(dest, f))]
        if len(plain) < 2:
            continue
        a, b = rng.sample(plain, 2)
        hg('update', '-q', '-C', '.')
        hg('rename', os.path.join(dest, a), p('ren-%d-a' % i), ok=(0, 1, 255))
        commit('side one %d' % i)
        hg('update', '-q', '-C', '.^')
        hg('copy', os.path.join(dest, b), p('dir/cp-%d-b' % i), ok=(0, 1, 255))
        with open(os.path.join(dest, a), 'ab') as fh:
            fh.write(b'edited on side two %d\n' % i)
        commit('side two %d' % i)
        code = hg('merge', '-q', '-r', 'max(head() and not . and not closed())', ok=(0, 1, 255))
        if code != 0:
            hg('update', '-q', '-C', '.')
            continue
    elif op < 0.88:
        t = rng.choice(['v1.0', 'v1.1', 'release', 'v2'])
        r = rng.random()
        if t in tags and r < 0.3:
            hg('tag', '-q', '--remove', t)
            tags.remove(t)
        else:
            code = hg('tag', '-q', '-f', '-r', rng.choice(['.', '.^', 'min(all())']), t, ok=(0, 1, 255))
            if code == 0 and t not in tags:
                tags.append(t)
        continue
    elif op < 0.92:
        # many small revisions of one file (long delta chains)
        for j in range(rng.randint(5, 15)):
            with open(p('chain.txt'), 'ab') as fh:
                fh.write(b'chain %d %d\n' % (i, j))
            commit('chain %d %d' % (i, j))
        continue
    elif big_blob is not None:
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(big_blob) - 64)
            big_blob[at:at + 64] = rng.randbytes(64)
        write('big.bin', bytes(big_blob))
    else:
        write('dir/bin%d.dat' % rng.randint(0, 3), rng.randbytes(rng.randint(0, 5000)))
    commit('c%d' % i)

# a branch whose tip is closed, and bookmarks (incl. '@' and divergent-looking names)
hg('update', '-q', '-C', 'default')
hg('branch', '-q', '-f', 'closedtip')
write('closedtip.txt', text(2))
commit('on closedtip')
hg('commit', '-q', '--close-branch', '-m', 'close closedtip')
hg('update', '-q', '-C', 'default')
hg('bookmark', '-q', '-f', '-r', 'min(all())', 'first')
hg('bookmark', '-q', '-f', '-r', 'tip', 'feature@default')
if rng.random() < 0.7:
    hg('bookmark', '-q', '-f', '-r', rng.choice(['.', 'max(all())', '0']), '@')
hg('bookmark', '-q', '-f', '-r', 'max(branch(default))^', 'book')
hg('bookmark', '-q', '-i')  # no active bookmark left by the generator
# phases: old history public, the rest draft, a secret head
hg('phase', '-q', '--public', '-r', 'first(all(), %d)' % rng.randint(5, 20))
# a secret changeset in half the repositories (hg serves no stream clone of those: pull instead)
if rng.random() < 0.5:
    write('secret.txt', text(2))
    hg('commit', '-q', '-A', '--secret', '-m', 'secret')
hg('update', '-q', '-C', 'default')

print(json.dumps({
    'config': config,
    'branches': branches,
    'tags': tags,
}))
