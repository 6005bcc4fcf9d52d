"""The names users type for the registered metrics (``mlguild.metrics.metric_name`` reads them)."""

from __future__ import annotations

# Names users type for a registered metric (scikit-learn's, Kaggle's, the short ones), after
# metric_name folds them: lower case, spaces and dashes as underscores.
ALIASES: dict[str, str] = {
    "auc": "roc_auc", "rocauc": "roc_auc", "roc_auc_score": "roc_auc", "auroc": "roc_auc",
    "acc": "accuracy", "accuracy_score": "accuracy",
    "kl": "kl_divergence", "kld": "kl_divergence", "kullback_leibler": "kl_divergence",
    "one_hot_logloss": "logloss_columns", "onehot_logloss": "logloss_columns", "logloss_one_hot": "logloss_columns",
    "top1_error": "error_rate", "top_1_error": "error_rate", "classification_error": "error_rate", "error": "error_rate",
    "log_loss": "logloss", "mlogloss": "logloss", "multi_logloss": "logloss", "cross_entropy": "logloss",
    "bce": "binary_logloss", "binary_crossentropy": "binary_logloss", "binary_log_loss": "binary_logloss",
    "f1_score": "f1", "macro_f1": "f1_macro", "f1macro": "f1_macro",
    "mean_squared_error": "mse", "l2": "mse",
    "root_mean_squared_error": "rmse",
    "root_mean_squared_log_error": "rmsle",
    "mean_absolute_error": "mae", "l1": "mae",
    "r2_score": "r2", "r_squared": "r2",
    "kappa": "qwk", "quadratic_weighted_kappa": "qwk",
    "map@k": "map_at_k", "mapk": "map_at_k", "map": "map_at_k",
    "ndcg": "ndcg_at_k", "ndcg@k": "ndcg_at_k",
    "mean_columnwise_rmse": "mcrmse", "mean_column_wise_rmse": "mcrmse", "columnwise_rmse": "mcrmse",
    "mcrmsle": "mean_columnwise_rmsle", "mean_column_wise_rmsle": "mean_columnwise_rmsle",
    "columnwise_rmsle": "mean_columnwise_rmsle",
    "mean_columnwise_auc": "mean_columnwise_roc_auc", "mean_column_wise_roc_auc": "mean_columnwise_roc_auc",
    "mean_column_wise_auc": "mean_columnwise_roc_auc", "columnwise_auc": "mean_columnwise_roc_auc",
    "mean_auc": "mean_columnwise_roc_auc",
    "pearsonr": "pearson", "pearson_correlation": "pearson", "pearson_r": "pearson",
    "spearmanr": "spearman", "spearman_correlation": "spearman", "spearman_rho": "spearman",
    "mean_column_wise_spearman": "mean_columnwise_spearman", "columnwise_spearman": "mean_columnwise_spearman",
    "mean_columnwise_log_loss": "mean_columnwise_logloss", "mean_column_wise_log_loss": "mean_columnwise_logloss",
    "columnwise_logloss": "mean_columnwise_logloss", "columnwise_log_loss": "mean_columnwise_logloss",
    "micro_f1": "multilabel_f1_micro", "f1_micro": "multilabel_f1_micro", "multilabel_f1": "multilabel_f1_micro",
    "multilabel_micro_f1": "multilabel_f1_micro", "multilabel_macro_f1": "multilabel_f1_macro",
    "matthews": "mcc", "matthews_corrcoef": "mcc", "matthews_correlation": "mcc", "phi": "mcc",
    "f1_label_sets": "f1_sets", "label_set_f1": "f1_sets", "micro_f1_sets": "f1_sets", "f1_sets_micro": "f1_sets",
    "mean_f1_sets": "f1_sets_mean", "kaggle_mean_f1": "f1_sets_mean",
    "jaccard": "jaccard_words", "word_jaccard": "jaccard_words", "mean_jaccard": "jaccard_words",
    "angular_error": "angular_distance", "mean_angular_error": "angular_distance",
    "probabilistic_f1": "pf1", "pfbeta": "pf1",
}  # fmt: skip
