"""The web server floor behind ``edgetool serve``: request targets mapped to site files (``files``), header checks
(``guard``), gzip (``compress``), the handler and the bounded server. Knows nothing of models; ``demo.serve`` uses it
to serve a built demo site."""
