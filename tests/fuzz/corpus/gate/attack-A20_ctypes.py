# A20: import ctypes; ctypes.CDLL(None).system(...).
def handle(request):
    import ctypes  # GATE
    libc = ctypes.CDLL(None)
    out = [str(libc.getenv(b'COIL_SECRET'))]
    out.append(str(libc.system(b'cat SECRET_PATH; touch MARKER_PATH')))
    return out
