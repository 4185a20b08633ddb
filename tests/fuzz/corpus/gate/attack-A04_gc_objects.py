# A04: import gc; scan gc.get_objects() for the posix module's dict.
def handle(request):
    import gc  # GATE
    out = []
    for o in gc.get_objects():
        if isinstance(o, dict) and 'system' in o and 'environ' in o:
            out.append('found posix dict')
            return loot(o, out)
    return out
