"""All rendering lives here: result objects in, rich renderables / JSON text / pictures out.

Library modules never print; the CLI hands their results to the functions in this package.
"""
