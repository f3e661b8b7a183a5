"""The predictive twin: power per node from utilisation (learned per node type), anomalies on
node metrics (Isolation Forest), utilisation forecasts per nodepool, all from the history.

No web framework here: ``twin/api/routes/predict.py`` serves them.
"""
