# A05: sys._getframe(1).f_globals['sys'] from a urlencode(quote_via=cb)
# callback, i.e. from inside a trusted helper's frame.
import urllib.parse
import sys  # GATE


def handle(request):
    box = []

    def cb(s, safe='', encoding=None, errors=None):
        box.append(sys._getframe(1).f_globals['sys'])
        return str(s)

    out = []
    try:
        urllib.parse.urlencode({'a': 'b'}, quote_via=cb)
    except Exception as e:
        out.append('urlencode: ' + repr(e))
    if not box:
        box.append(sys)
    real_sys = box[0]
    return loot(real_sys.modules['posix'].__dict__, out)
