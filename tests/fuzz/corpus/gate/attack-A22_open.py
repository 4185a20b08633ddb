# A22: open() of files inside and outside the rootfs, and a write.
def handle(request):
    out = []
    for path in ['/etc/hostname', 'SECRET_PATH', '/proc/SECRET_PID/environ',
                 '/proc/self/environ']:
        try:
            out.append(open(path).read())  # GATE
        except Exception as e:
            out.append(path + ': ' + repr(e))
    f = open('MARKER_PATH', 'w')
    f.write('escaped')
    f.close()
    return out
