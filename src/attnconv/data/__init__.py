"""Data sets used by the book: where they are found, and small examples for the chapters."""

from .cifar10 import CIFAR10_CLASSES, ExampleImage, example_image
from .paths import data_root

__all__ = ["CIFAR10_CLASSES", "ExampleImage", "data_root", "example_image"]
