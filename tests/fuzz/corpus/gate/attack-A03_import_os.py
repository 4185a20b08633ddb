# A03: a plain `import os`.
def handle(request):
    import os  # GATE
    out = ['import gave ' + repr(os)]
    return loot(os.__dict__, out)
