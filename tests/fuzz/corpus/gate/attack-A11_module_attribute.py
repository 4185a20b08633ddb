# A11: a module reached as a public attribute of a helper module:
# urllib.parse.sys.modules['posix'].
import urllib.parse


def handle(request):
    real_sys = urllib.parse.sys  # GATE
    out = ['got sys']
    return loot(real_sys.modules['posix'].__dict__, out)
