# A21: operator.attrgetter('__class__.__base__.__subclasses__') and
# methodcaller('load_module', 'posix').
import operator  # GATE


def handle(request):
    subs = operator.attrgetter('__class__.__base__.__subclasses__')(())()
    name = operator.attrgetter('__name__')
    out = []
    for c in subs:
        if name(c) == 'BuiltinImporter':
            posix = operator.methodcaller('load_module', 'posix')(c)
            out.append('got posix')
            return loot(operator.attrgetter('__dict__')(posix), out)
    return out
