"""Data sets used by the book: where they are found, and small examples for the chapters."""

from .augment import CIFAR10_MEAN, CIFAR10_STD, CropFlip, CropFlipParams, normalize
from .cifar10 import (CIFAR10, CIFAR10_CLASSES, CIFAR10_MD5, ExampleImage, default_cache_dir, example_image,
                      generated_cifar10, load_cifar10)
from .corpus import PRETRAIN_CORPORA, Corpus, Document, load_corpus
from .paths import data_root
from .tasks import TASKS, TaskData, TextExample, load_task

__all__ = ["CIFAR10", "CIFAR10_CLASSES", "CIFAR10_MD5", "CIFAR10_MEAN", "CIFAR10_STD", "CropFlip", "CropFlipParams",
           "ExampleImage", "data_root", "default_cache_dir", "example_image", "generated_cifar10", "load_cifar10",
           "normalize"]
__all__ += ["PRETRAIN_CORPORA", "TASKS", "Corpus", "Document", "TaskData", "TextExample", "load_corpus", "load_task"]
