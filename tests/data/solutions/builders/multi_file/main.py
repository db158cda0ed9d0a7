from helpers import OFFSET, shift
from ops.scale import scale


def run(x):
    return scale(shift(x)) + OFFSET
