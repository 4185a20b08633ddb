# A10: the same traversal through str.format_map.
import urllib.parse


def handle(request):
    u = urllib.parse.urlsplit('http://x.test/a?b=1')
    out = []
    try:
        out.append('{x.geturl.__func__.__globals__[sys].modules[os].environ[COIL_SECRET]}'.format_map({'x': u}))  # GATE
    except Exception as e:
        out.append('1: ' + repr(e))
    for spec in ['{x.geturl.__func__.__globals__[sys].modules[os].environ}',
                 '{x.__class__.__init__.__globals__}',
                 '{x.__class__.__mro__}']:
        try:
            out.append(spec.format_map({'x': u}))
        except Exception as e:
            out.append(spec + ': ' + repr(e))
    return out
