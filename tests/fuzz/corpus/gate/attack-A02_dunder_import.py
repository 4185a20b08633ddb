# A02: __import__('os') through the builtins.
def handle(request):
    os = __import__('os')  # GATE
    out = ['import gave ' + repr(os)]
    return loot(os.__dict__, out)
