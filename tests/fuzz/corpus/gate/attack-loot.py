

# ---- appended by test_python_security.py to every attack (after handle, so
# the gate's first violation stays at the attack's own `# GATE` line) ----
def emit(d, out, text):
    # Write at once through the raw fd too: a later kill must not hide a leak.
    out.append(text)
    try:
        d['write'](1, (text + '\n').encode())
    except Exception:
        pass


def loot(d, out):
    # d: the namespace dict of posix/os (or anything with those keys).
    # Unaudited reads first, then audited effects: a denied audit event
    # other than open/import ends the process.
    try:
        emit(d, out, 'environ=' + str(d['environ']))
    except Exception as e:
        out.append('environ: ' + repr(e))
    paths = ['SECRET_PATH', '/proc/SECRET_PID/environ',
             '/proc/SECRET_PID/cmdline', '/proc/self/environ',
             '/proc/1/environ']
    for path in paths:
        try:
            fd = d['open'](path, 0)
            emit(d, out, path + '=' + str(d['read'](fd, 65536)))
        except Exception as e:
            out.append(path + ': ' + repr(e))
    try:
        fd = d['open']('MARKER_PATH', 65, 420)
        d['write'](fd, b'escaped')
        emit(d, out, 'marker written')
    except Exception as e:
        out.append('marker: ' + repr(e))
    try:
        emit(d, out, 'system=' + str(d['system'](
            'cat SECRET_PATH /proc/SECRET_PID/environ; touch MARKER_PATH')))
    except Exception as e:
        out.append('system: ' + repr(e))
    try:
        d['kill'](SECRET_PID, 9)
        emit(d, out, 'killed')
    except Exception as e:
        out.append('kill: ' + repr(e))
    try:
        emit(d, out, 'listdir=' + str(d['listdir']('/')))
    except Exception as e:
        out.append('listdir: ' + repr(e))
    return out
