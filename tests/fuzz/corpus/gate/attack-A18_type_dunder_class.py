# A18: a class built by type() with __getattr__ / __del__ hooks.
def handle(request):
    box = []
    C = type('C', (), {  # GATE
        '__getattr__': lambda self, n: n,
        '__del__': lambda self: box.append(open('SECRET_PATH').read()),
    })
    c = C()
    out = [c.anything]
    del c
    return out + box
