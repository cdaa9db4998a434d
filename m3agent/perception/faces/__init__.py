from m3agent.perception.faces.base import FaceBackend, FaceDetection

__all__ = ["FaceBackend", "FaceDetection"]
