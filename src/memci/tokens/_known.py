"""memci's tool schemas counted ahead by the estimate: generated, do not edit.

``python -m tests.known_counts --write`` rewrites it (see :mod:`memci.tokens._ahead`).
"""

COUNTS: dict[str, int] = {
    "0274e21c2f85c0a9": 573,
    "09824db2b28fc069": 798,
    "20a6ee71d2fc5953": 496,
    "269f23d574434d43": 478,
    "3145981c0bef33c0": 692,
    "3d921b8843ab0601": 215,
    "41bc2eeb0d39225c": 235,
    "50996e1f3c7e9582": 555,
    "6d87186c336e9eba": 339,
    "6f7aaba266542e2c": 478,
    "74d6a54cd77b11ef": 659,
    "7b101e237ad09e7a": 564,
    "94fe4d281963cc79": 816,
    "aecccbe41a3e5913": 721,
    "b048102398e5e5de": 401,
    "ba07d67c09739b16": 769,
    "bf61406f360c67c3": 78,
    "d923f2d2ca7727f0": 449,
    "e058d6039bc22b54": 244,
    "e368381ff402baf7": 158,
    "e9d5863fd0297393": 321,
    "f11f800189f5c08b": 372,
    "f3a53e39235a7927": 535,
    "ffba3d3032df33de": 893,
}
