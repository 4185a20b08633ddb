# A19: a parameter named __builtins__ (GHSA-ffg3-p8fm-mjx2 shape).
def handle(request):
    def f(__builtins__, /):  # GATE
        return open('SECRET_PATH').read()

    return f({'open': None})
