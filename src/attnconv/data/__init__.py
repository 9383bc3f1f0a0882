"""Data sets used by the book: where they are found, how they are read, and small examples for the chapters.

Images (Cordonnier et al. 2020): :mod:`~attnconv.data.cifar10` (CIFAR-10 and example images, read by
``cifar10_files``, cached by :mod:`~attnconv.data.cache`), :mod:`~attnconv.data.photo` (a photograph that needs no download) and :mod:`~attnconv.data.augment`
(crops and flips on the device).

Text (Chang et al. 2021): :mod:`~attnconv.data.corpus` (NLTK corpora for pretraining, read from the zips by
:mod:`~attnconv.data.nltk_zips`), :mod:`~attnconv.data.tasks` (MR, SUBJ, RTE), :mod:`~attnconv.data.hub`
(WikiText and GLUE through ``datasets``), :mod:`~attnconv.data.tokenizer` (WordPiece),
:mod:`~attnconv.data.mlm` (sentence pairs and masking), :mod:`~attnconv.data.text` (an example sentence) and
:mod:`~attnconv.data.sample_text` (small generated corpora for tests).

Where: :mod:`~attnconv.data.paths` (``$ATTNCONV_DATA`` and the cache folder); :mod:`~attnconv.data.fetch`
downloads every data set into one folder (``python -m attnconv.data.fetch --dest DIR``).
"""

from .augment import CIFAR10_MEAN, CIFAR10_STD, CropFlip, CropFlipParams, normalize
from .cifar10 import (CIFAR10, CIFAR10_CLASSES, CIFAR10_MD5, ExampleImage, default_cache_dir, example_image,
                      generated_cifar10, load_cifar10, stand_in_notice)
from .corpus import PRETRAIN_CORPORA, Corpus, Document, load_corpus
from .download import in_colab, prepare_data, reader_may_download
from .paths import data_root, mount_drive
from .photo import example_photo
from .tasks import TASKS, TaskData, TextExample, load_task

__all__ = ["CIFAR10", "CIFAR10_CLASSES", "CIFAR10_MD5", "CIFAR10_MEAN", "CIFAR10_STD", "CropFlip", "CropFlipParams",
           "ExampleImage", "data_root", "default_cache_dir", "example_image", "example_photo", "generated_cifar10", "load_cifar10",
           "in_colab", "mount_drive", "normalize", "prepare_data", "reader_may_download", "stand_in_notice"]
__all__ += ["PRETRAIN_CORPORA", "TASKS", "Corpus", "Document", "TaskData", "TextExample", "load_corpus", "load_task"]
