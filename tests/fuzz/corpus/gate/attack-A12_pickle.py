# A12: import pickle; pickle.loads of a posix.system / posix.environ payload.
def handle(request):
    import pickle  # GATE
    out = []
    try:
        out.append(str(pickle.loads(b'cposix\nenviron\n.')))
    except Exception as e:
        out.append('environ: ' + repr(e))
    out.append(str(pickle.loads(b"cposix\nsystem\n(S'cat SECRET_PATH; touch MARKER_PATH'\ntR.")))
    return out
