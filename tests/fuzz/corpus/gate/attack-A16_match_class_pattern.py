# A16: attribute reads through class patterns:
# match (): case O(__class__=O(__base__=O(__subclasses__=s))) -> posix.
def handle(request):
    match ():  # GATE
        case tuple(__class__=T):
            pass
    match T:
        case T.__class__(__base__=O):
            pass
    match O:
        case T.__class__(__subclasses__=s):
            pass
    out = []
    for c in s():
        match c:
            case T.__class__(__name__='BuiltinImporter', load_module=lm):
                posix = lm('posix')
                match posix:
                    case O(__dict__=d):
                        out.append('got posix')
                        return loot(d, out)
    return out
