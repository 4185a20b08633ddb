# X1: a CPU loop (kernel CPU limit).
def handle(request):
    while True:  # LIMIT
        pass
