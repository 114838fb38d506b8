"""TFLite model metadata (labels, input normalization, descriptions) and TFJS labels that apps load without code.

``metadata_schema_py_generated.py`` is the flatc output of the official ``metadata_schema.fbs``, byte-identical to
the copy in ``mediapipe`` 1.2.3 (``mediapipe/tasks/metadata/metadata_schema_py_generated.py``, Apache-2.0;
tests/test_metadata.py checks the bytes against the installed mediapipe). It is shipped here rather than imported
from mediapipe because no mediapipe release can be a dependency of edgetool: every release that supports numpy 2
(0.10.30 and later) requires ``absl-py~=2.3`` while tensorflow-model-optimization 0.8 requires ``absl-py~=1.2`` (pip
reports ResolutionImpossible), and 0.10.21, whose high-level ``metadata_writers`` still work, pins numpy < 2 and
protobuf < 5. In mediapipe 1.2.x those writers import a native module (``mediapipe.tasks.cc.metadata.python``)
the wheel lacks, so the populator here follows their source instead: the metadata flatbuffer is built with the
generated classes and put into the model's ``TFLITE_METADATA`` buffer, and associated files are appended to the
model as a zip archive, exactly as ``MetadataPopulator`` does.

writer.py builds and embeds, reader.py reads (treating the file as hostile), labels.py reads a labels file,
tfjs.py puts labels into a TFJS model.json.
"""
