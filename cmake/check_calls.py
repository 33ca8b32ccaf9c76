#!/usr/bin/env python3
"""File-level call graph from a build's object files (nm): reports pairs of files
that call each other and larger cycles. Usage: check_calls.py BUILD_DIR DIR,DIR,...
(run from the source root). Callbacks through function pointers are not calls."""
import subprocess, sys, glob, os, collections
build = sys.argv[1]; dirs = sys.argv[2].split(',')
objs = {}
for o in glob.glob(build + '/**/CMakeFiles/*.dir/**/*.c.o', recursive=True):
    rel = o.split('.dir/')[1][:-2]
    tgt = o.split('CMakeFiles/')[1].split('.dir')[0]
    d = os.path.basename(os.path.dirname(o.split('CMakeFiles/')[0].rstrip('/')+'/x'))
    src = os.path.relpath(o.split('CMakeFiles/')[0], build).rstrip('/')
    name = (src + '/' + rel) if src != '.' else rel
    if not any(name.startswith(x + '/') for x in dirs) or name.startswith('tests'):
        continue
    if not os.path.exists(name):
        continue  # a stale object of a moved file
    objs[name] = o
defs = {}; undef = collections.defaultdict(set)
for n, o in objs.items():
    out = subprocess.run(['nm', o], capture_output=True, text=True).stdout
    for l in out.splitlines():
        p = l.split()
        if len(p) == 3 and p[1] in 'TDBR': defs[p[2]] = n
        elif len(p) == 2 and p[0] == 'U': undef[n].add(p[1])
g = collections.defaultdict(set)
for n, us in undef.items():
    for u in us:
        if u in defs and defs[u] != n: g[n].add(defs[u])
bad = 0
for a in sorted(g):
    for b in sorted(g[a]):
        if a < b and a in g[b]:
            print('mutual:', a, '<->', b); bad += 1
# SCCs (Tarjan)
idx = {}; low = {}; st = []; on = set(); sccs = []; c = [0]
sys.setrecursionlimit(10000)
def sc(v):
    idx[v] = low[v] = c[0]; c[0] += 1; st.append(v); on.add(v)
    for w in g.get(v, ()):
        if w not in idx: sc(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], idx[w])
    if low[v] == idx[v]:
        comp = []
        while True:
            w = st.pop(); on.discard(w); comp.append(w)
            if w == v: break
        if len(comp) > 1: sccs.append(sorted(comp))
for v in list(objs):
    if v not in idx: sc(v)
for s in sccs: print('cycle:', ' '.join(s)); bad += 1
print(f'{len(objs)} files, {sum(len(v) for v in g.values())} file->file edges, {bad} problem(s)')
sys.exit(1 if bad else 0)
