"""The command line (`xhq-audit …`, `python -m audit …`): parse, call the library, print.

    main        scan, export-quarantine, manifest, descriptors, mixing, checks; the parser
    compare     compare, accept
    evaluation  evaluate, judge, retrieval
    review      review push|status|pull|release|adjudicate|evidence|report
    repair      repair plan|apply
    options     the options several commands share, each declared once
"""
