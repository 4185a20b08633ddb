# A15: gh-128049: an ExceptionGroup subclass whose split() returns a
# non-tuple makes `except*` read it as a tuple (SIGSEGV on 3.11.2).
def handle(request):
    class Evil(BaseExceptionGroup):  # GATE
        def split(self, *args):
            return 'NOT A TUPLE!'

    try:
        raise Evil('', (Exception(),))
    except* Exception:
        pass
    return 'survived'
