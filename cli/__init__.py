"""The ``ifjudge`` command line: thin shells over the same library calls as the pages."""
